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
-- Returns {code, job_id, state, printer_id, position}
--   code 1 accepted, 2 duplicate (same payload), 3 shed (backpressure),
--   -1 idempotency conflict (same key, other payload).
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

local depth = redis.call('ZCARD', KEYS[2])
if depth >= tonumber(ARGV[5]) then
  -- Shed jobs do not claim the key: the kiosk's retry must be able to get in,
  -- and a later redrive goes through this same gate again.
  redis.call('HSET', KEYS[3], 'dead_reason', 'backpressure', 'dead_ms', now)
  redis.call('ZADD', KEYS[7], now, job_id)
  transition(prefix, job_id, false, 'dead_lettered', ARGV[13],
    'backpressure: queue ' .. printer_id .. ' at ' .. depth, now)
  return {3, job_id, 'dead_lettered', printer_id, depth}
end

redis.call('SET', KEYS[1], job_id .. '|' .. payload_hash, 'EX', tonumber(ARGV[4]))
transition(prefix, job_id, false, 'queued', ARGV[13], 'accepted', now)
enqueue(prefix, job_id, printer_id, score, ARGV[15])
return {1, job_id, 'queued', printer_id, redis.call('ZRANK', KEYS[2], job_id)}
