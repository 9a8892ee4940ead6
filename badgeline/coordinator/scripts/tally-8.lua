-- Count one job into the operator's reports, from the job's current state:
-- accepted, shed, printed (by printer, hour and source), failed attempts (by
-- printer and reason), canceled; and index it when it is flagged a possible
-- duplicate or held for an operator. Called after every request that may have
-- changed the job. Markers on the job hash (tally_*) make a repeat a no-op, so
-- a retried request (an agent's ack outbox, a kiosk's retry) never counts twice.
--
-- KEYS[1] job hash  KEYS[2] totals hash  KEYS[3] per-printer hash  KEYS[4] per-hour hash
-- KEYS[5] per-source hash  KEYS[6] failure reasons hash  KEYS[7] possible-duplicates set
-- KEYS[8] held zset
-- ARGV[1] distinct failure reasons kept (later new reasons count as 'other')
-- Returns {newly_printed (1|0), created_ms, printed_ms}
local f = redis.call('HMGET', KEYS[1], 'state', 'created_ms', 'printed_ms', 'printed_by',
  'source', 'reprint_of', 'dead_reason', 'failed_lease', 'last_error', 'printer_id',
  'possible_duplicate', 'tally_accepted', 'tally_shed', 'tally_printed', 'tally_failed_lease',
  'tally_canceled', 'job_id')
local state = f[1]
if not state then
  return {0, 0, 0}
end
local job_id = f[17]

-- A job shed at submission (dead_reason backpressure) has not been accepted;
-- it is, once a redrive queues it (the redrive clears dead_reason).
local accepted = f[12] == '1'
if not accepted and f[7] ~= 'backpressure' then
  accepted = true
  redis.call('HSET', KEYS[1], 'tally_accepted', 1)
  redis.call('HINCRBY', KEYS[2], 'accepted', 1)
  if f[6] and f[6] ~= '' then
    redis.call('HINCRBY', KEYS[2], 'reprints', 1)
  end
end
if f[7] == 'backpressure' and f[13] ~= '1' then
  redis.call('HSET', KEYS[1], 'tally_shed', 1)
  redis.call('HINCRBY', KEYS[2], 'shed', 1)
end

local newly_printed = 0
if state == 'printed' and f[14] ~= '1' then
  newly_printed = 1
  redis.call('HSET', KEYS[1], 'tally_printed', 1)
  redis.call('HINCRBY', KEYS[2], 'printed', 1)
  redis.call('HINCRBY', KEYS[3], 'printed|' .. (f[4] or f[10] or ''), 1)
  local hour = math.floor(tonumber(f[3] or f[2]) / 3600000) * 3600
  redis.call('HINCRBY', KEYS[4], tostring(hour), 1)
  redis.call('HINCRBY', KEYS[5], f[5] or 'unknown', 1)
end

-- Each failed attempt leaves its lease in failed_lease: count each lease once.
if f[8] and f[8] ~= '' and f[8] ~= f[15] then
  redis.call('HSET', KEYS[1], 'tally_failed_lease', f[8])
  redis.call('HINCRBY', KEYS[2], 'failed_attempts', 1)
  redis.call('HINCRBY', KEYS[3], 'failed|' .. (f[10] or ''), 1)
  local reason = string.sub(f[9] or '', 1, 120)
  if reason == '' then reason = 'unknown' end
  if redis.call('HEXISTS', KEYS[6], reason) == 0
      and redis.call('HLEN', KEYS[6]) >= tonumber(ARGV[1]) then
    reason = 'other'
  end
  redis.call('HINCRBY', KEYS[6], reason, 1)
end

if state == 'canceled' and accepted and f[16] ~= '1' then
  redis.call('HSET', KEYS[1], 'tally_canceled', 1)
  redis.call('HINCRBY', KEYS[2], 'canceled', 1)
end
if f[11] == '1' then
  redis.call('SADD', KEYS[7], job_id)
end
if state == 'held' then
  redis.call('ZADD', KEYS[8], 'NX', tonumber(f[2]), job_id)
end
return {newly_printed, tonumber(f[2]) or 0, tonumber(f[3]) or 0}
