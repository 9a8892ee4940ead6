-- Cancel a job that has not started printing.
--
-- KEYS[1] job hash  KEYS[2] lease expiry zset  KEYS[3] dead-letter zset
-- ARGV[1] prefix  ARGV[2] actor  ARGV[3] reason
-- Counts the job into the reports (includes/tally.lua) in the same step.
-- Returns {code, state}: 1 canceled, 0 already canceled, -1 not cancelable, -2 no such job.
local prefix = ARGV[1]
local f = redis.call('HMGET', KEYS[1], 'state', 'printer_id', 'job_id')
local state = f[1]
if not state then
  return {-2, 'not_found'}
end
if state == 'canceled' then
  tally(prefix, f[3])
  return {0, state}
end
if state == 'queued' then
  redis.call('ZREM', queue_key(prefix, f[2]), f[3])
elseif state == 'leased' then
  redis.call('ZREM', KEYS[2], f[3])
elseif state == 'dead_lettered' then
  redis.call('ZREM', KEYS[3], f[3])
elseif state == 'parked' then
  redis.call('ZREM', prefix .. 'parked', f[3])
elseif state == 'retrying' then
  redis.call('ZREM', prefix .. 'retry', f[3])
elseif state == 'held' then
  redis.call('ZREM', prefix .. 'held', f[3])
else
  return {-1, state}
end
transition(prefix, f[3], state, 'canceled', ARGV[2], ARGV[3], now_ms())
tally(prefix, f[3])
return {1, 'canceled'}
