-- Accept a print job: dedupe gate, backpressure check and enqueue, atomically.
--
-- KEYS[1] idempotency key     KEYS[2] printer queue     KEYS[3] job hash
-- KEYS[4] job history         KEYS[5] acceptance seq    KEYS[6] attendee index
-- KEYS[7] dead-letter zset    KEYS[8] printers set
-- ARGV[1] prefix  ARGV[2] job_id  ARGV[3] payload_hash  ARGV[4] dedupe_ttl_s
-- ARGV[5] high_water  ARGV[6] priority  ARGV[7] attendee_id  ARGV[8] badge_pdf_ref
-- ARGV[9] printer_target  ARGV[10] printer_id  ARGV[11] idempotency_key
-- ARGV[12] correlation_id  ARGV[13] actor  ARGV[14] reprint_of ('' for none)
-- ARGV[15] wake channel
-- ARGV[16] peers the job may spill to when its printer is dead or full: a JSON
--   list, '*' for every printer of the venue (KEYS[8]), or '[]' for none
-- Returns {code, job_id, state, printer_id, position}
--   code 1 accepted (state queued, or parked when its printer is dead and no
--   peer can take it), 2 duplicate (same payload), 3 shed (backpressure),
--   -1 idempotency conflict (same key, other payload).
-- The job is counted into the reports (includes/tally.lua) in the same step.
local prefix, job_id, payload_hash = ARGV[1], ARGV[2], ARGV[3]
local printer_id = ARGV[10]

local claimed = redis.call('GET', KEYS[1])
if claimed then
  local sep = string.find(claimed, '|', 1, true)
  local existing_id = string.sub(claimed, 1, sep - 1)
  local existing_hash = string.sub(claimed, sep + 1)
  if existing_hash ~= payload_hash then
    return {-1, existing_id, '', '', -1}
  end
  -- A no-op unless the first request's reply was lost before it was counted.
  tally(prefix, existing_id)
  local existing = redis.call('HMGET', job_key(prefix, existing_id), 'state', 'printer_id')
  local rank = redis.call('ZRANK', queue_key(prefix, existing[2] or ''), existing_id)
  return {2, existing_id, existing[1] or '', existing[2] or '', rank or -1}
end

local now = now_ms()
local seq = redis.call('INCR', KEYS[5])
local priority = tonumber(ARGV[6])
-- priority * 2^32 + seq: lower number first, FIFO within a priority; exact in a double.
local score = priority * 4294967296 + seq
redis.call('HSET', KEYS[3],
  'job_id', job_id, 'attendee_id', ARGV[7], 'badge_pdf_ref', ARGV[8],
  'printer_target', ARGV[9], 'printer_id', printer_id, 'priority', priority,
  'idempotency_key', ARGV[11], 'payload_hash', payload_hash, 'score', score, 'seq', seq,
  'attempts', 0, 'fence', 0, 'possible_duplicate', 0, 'reprint_of', ARGV[14],
  'correlation_id', ARGV[12], 'source', ARGV[13], 'created_ms', now)
redis.call('SADD', KEYS[6], job_id)
redis.call('SADD', KEYS[8], printer_id)

local high_water = tonumber(ARGV[5])
local depth = redis.call('ZCARD', KEYS[2])
local target_dead = redis.call('HGET', printer_key(prefix, printer_id), 'state') == 'dead'
local reason = 'accepted'
if target_dead or depth >= high_water then
  local peers
  if ARGV[16] == '*' then peers = redis.call('SMEMBERS', KEYS[8]) else peers = cjson.decode(ARGV[16]) end
  local peer = pick_target(prefix, peers, high_water, now, printer_id)
  if peer then
    reason = 'accepted; spilled from ' .. printer_id .. ' (dead or full) to ' .. peer
    printer_id, depth, target_dead = peer, redis.call('ZCARD', queue_key(prefix, peer)), false
    redis.call('HSET', KEYS[3], 'printer_id', peer)
  end
end
if depth >= high_water then
  -- Shed jobs do not claim the key: the kiosk's retry must be able to get in,
  -- and a later redrive goes through this same gate again.
  redis.call('HSET', KEYS[3], 'dead_reason', 'backpressure', 'dead_ms', now)
  redis.call('ZADD', KEYS[7], now, job_id)
  transition(prefix, job_id, false, 'dead_lettered', ARGV[13],
    'backpressure: queue ' .. printer_id .. ' at ' .. depth, now)
  tally(prefix, job_id)
  return {3, job_id, 'dead_lettered', printer_id, depth}
end

redis.call('SET', KEYS[1], job_id .. '|' .. payload_hash, 'EX', tonumber(ARGV[4]))
if target_dead then
  transition(prefix, job_id, false, 'queued', ARGV[13], 'accepted', now)
  park_job(prefix, job_id, 'queued', ARGV[13], 'printer ' .. printer_id .. ' is dead and no peer can take it', now)
  tally(prefix, job_id)
  return {1, job_id, 'parked', printer_id, -1}
end
transition(prefix, job_id, false, 'queued', ARGV[13], reason, now)
enqueue(prefix, job_id, printer_id, score, ARGV[15])
tally(prefix, job_id)
return {1, job_id, 'queued', printer_id, redis.call('ZRANK', queue_key(prefix, printer_id), job_id)}
