-- Accept a print job: dedupe gate, routing, backpressure check and enqueue, atomically.
--
-- KEYS[1] idempotency key     KEYS[2] job hash          KEYS[3] job history
-- KEYS[4] acceptance seq      KEYS[5] attendee index    KEYS[6] dead-letter zset
-- KEYS[7] printers set
-- (The claim is `<job_id>|<payload hash>`, with `|<JSON>` after it once its job has
-- left Redis: VenueKeys.idempotency.)
-- (Queue keys are built from the prefix: a routed job's printer is chosen here.)
-- ARGV[1] prefix  ARGV[2] job_id  ARGV[3] payload_hash
-- ARGV[4] dedupe window s (counted from the job's closing, see transition())
-- ARGV[5] high_water
-- ARGV[6] the job's payload: PrintJob as JSON, stored as it is in the `payload` field
-- ARGV[7] printer_id ('' for a routed job)
-- ARGV[8] correlation_id  ARGV[9] actor  ARGV[10] reprint_of ('' for none)
-- ARGV[11] wake channel
-- ARGV[12] peers the job may spill to when its printer is dead or full: a JSON
--   list, '*' for every printer of the venue (KEYS[7]), or '[]' for none
--   (a routed job: '[]', it goes to the least loaded printer already)
-- ARGV[9] routing candidates of a pool or `auto` job: a JSON list, or '*' for
--   every printer of the venue; '' for a job naming its printer
-- ARGV[14] label the candidates must carry ('' for none)
-- ARGV[15] heartbeat age (ms) past which a printer takes no new routed work
-- ARGV[16] submitting kiosk token's name ('' when no kiosk submits it)
-- ARGV[17] that kiosk's group ('' for none)
-- ARGV[18] '1' when a named printer must have reported (a heartbeat) to be targeted:
--   the config names it nowhere, so an id no agent ever sent is a typo
-- Returns {code, job_id, state, printer_id, position}, and for codes 2 and -1
--   also the existing job's {kiosk, kiosk_group, source} (nil where absent:
--   a job accepted before submitters were recorded), for api/visibility.py to
--   decide whether the caller may learn of that job.
--   code 1 accepted (state queued, or parked when its printer is dead and no
--   peer can take it), 2 duplicate (same payload), 3 shed (backpressure),
--   -1 idempotency conflict (same key, other payload), -3 no fit printer for a
--   routed job, -4 the named printer is unknown (ARGV[18]), -5 the named printer
--   rejects new jobs (-3 to -5: nothing written).
-- The job is counted into the reports (includes/tally.lua) in the same step.
-- Routing here, not in a call before, means concurrent submits see each
-- other's jobs: two calls let a burst of kiosks all pick the same printer.
local prefix, job_id, payload_hash = ARGV[1], ARGV[2], ARGV[3]
local payload = cjson.decode(ARGV[6])
local printer_id = ARGV[7]

local claimed = redis.call('GET', KEYS[1])
if claimed then
  local sep = string.find(claimed, '|', 1, true)
  local existing_id = string.sub(claimed, 1, sep - 1)
  local rest = string.sub(claimed, sep + 1)
  local tail = string.find(rest, '|', 1, true)
  local existing_hash = tail and string.sub(rest, 1, tail - 1) or rest
  local existing = redis.call('HMGET', job_key(prefix, existing_id), 'state', 'printer_id',
    'kiosk', 'kiosk_group', 'source')
  if not existing[1] and tail then
    -- The job has left Redis (retention) inside its key's dedupe window: the
    -- claim kept what this answer needs (retire-4.lua).
    local kept = cjson.decode(string.sub(rest, tail + 1))
    existing = {kept.state, kept.printer_id, kept.kiosk, kept.kiosk_group, kept.source}
  end
  if existing_hash ~= payload_hash then
    return {-1, existing_id, '', '', -1, existing[3], existing[4], existing[5]}
  end
  -- A no-op unless the first request's reply was lost before it was counted.
  tally(prefix, existing_id)
  local rank = redis.call('ZRANK', queue_key(prefix, existing[2] or ''), existing_id)
  return {2, existing_id, existing[1] or '', existing[2] or '', rank or -1,
    existing[3], existing[4], existing[5]}
end

if printer_id ~= '' then
  local named = redis.call('HMGET', printer_key(prefix, printer_id), 'last_heartbeat_ms',
    'rejecting')
  if ARGV[18] == '1' and not named[1] then
    return {-4, '', '', printer_id, -1}
  end
  if named[2] == '1' then
    return {-5, '', '', printer_id, -1}
  end
end

local now = now_ms()
local seq = redis.call('INCR', KEYS[4])
if ARGV[13] ~= '' then
  local candidates
  if ARGV[13] == '*' then candidates = redis.call('SMEMBERS', KEYS[7]) else candidates = cjson.decode(ARGV[13]) end
  printer_id = route_target(prefix, candidates, ARGV[14], tonumber(ARGV[15]), now, seq)
  if not printer_id then
    return {-3, '', '', '', -1}
  end
end
local priority = tonumber(payload.priority)
-- priority * 2^32 + seq: lower number first, FIFO within a priority; exact in a double.
local score = priority * 4294967296 + seq
-- The claim's name is kept beside the payload: every script that closes a job or
-- logs it reads it, and none needs the rest of the payload for that.
redis.call('HSET', KEYS[2],
  'job_id', job_id, 'payload', ARGV[6], 'idempotency_key', payload.idempotency_key,
  'printer_id', printer_id, 'payload_hash', payload_hash, 'score', score, 'seq', seq,
  'attempts', 0, 'fence', 0, 'possible_duplicate', 0, 'reprint_of', ARGV[10],
  'correlation_id', ARGV[8], 'source', ARGV[9], 'created_ms', now,
  'dedupe_window_s', ARGV[4], 'kiosk', ARGV[16], 'kiosk_group', ARGV[17])
if payload.expire_after_s then
  -- The deadline, on the Redis clock: no printer may start the job after it
  -- (start-2.lua, lease-3.lua; expire_jobs-1.lua expires it). Unset: no field at all.
  redis.call('HSET', KEYS[2], 'expires_ms', now + math.floor(tonumber(payload.expire_after_s) * 1000))
end
redis.call('SADD', KEYS[5], job_id)
redis.call('SADD', KEYS[7], printer_id)

local high_water = tonumber(ARGV[5])
local depth = redis.call('ZCARD', queue_key(prefix, printer_id))
local target_dead = redis.call('HGET', printer_key(prefix, printer_id), 'state') == 'dead'
local reason = 'accepted'
if target_dead or depth >= high_water then
  local peers
  if ARGV[12] == '*' then peers = redis.call('SMEMBERS', KEYS[7]) else peers = cjson.decode(ARGV[12]) end
  local peer = pick_target(prefix, peers, high_water, now, printer_id)
  if peer then
    reason = 'accepted; spilled from ' .. printer_id .. ' (dead or full) to ' .. peer
    printer_id, depth, target_dead = peer, redis.call('ZCARD', queue_key(prefix, peer)), false
    redis.call('HSET', KEYS[2], 'printer_id', peer)
  end
end
if depth >= high_water then
  -- Shed jobs do not claim the key: the kiosk's retry must be able to get in,
  -- and a later redrive goes through this same gate again.
  redis.call('HSET', KEYS[2], 'dead_reason', 'backpressure', 'dead_ms', now)
  redis.call('ZADD', KEYS[6], now, job_id)
  transition(prefix, job_id, false, 'dead_lettered', ARGV[9],
    'backpressure: queue ' .. printer_id .. ' at ' .. depth, now)
  tally(prefix, job_id)
  return {3, job_id, 'dead_lettered', printer_id, depth}
end

-- No expiry while the job is open: transition() starts the window when it closes.
redis.call('SET', KEYS[1], job_id .. '|' .. payload_hash)
if target_dead then
  transition(prefix, job_id, false, 'queued', ARGV[9], 'accepted', now)
  park_job(prefix, job_id, 'queued', ARGV[9], 'printer ' .. printer_id .. ' is dead and no peer can take it', now)
  tally(prefix, job_id)
  return {1, job_id, 'parked', printer_id, -1}
end
transition(prefix, job_id, false, 'queued', ARGV[9], reason, now)
enqueue(prefix, job_id, printer_id, score, ARGV[11])
tally(prefix, job_id)
return {1, job_id, 'queued', printer_id, redis.call('ZRANK', queue_key(prefix, printer_id), job_id)}
