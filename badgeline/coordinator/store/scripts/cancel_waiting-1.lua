-- Cancel the jobs of one printer that no printer has started, on an operator's
-- word (`badgeline cancel --printer P --all`): each named job still queued on that
-- printer, or leased by its agent and not yet started (its start is then refused).
-- A job that has moved on meanwhile (started, moved, finished) is left as it is.
--
-- KEYS[1] lease expiry zset
-- ARGV[1] prefix  ARGV[2] printer_id  ARGV[3] actor  ARGV[4] reason
-- ARGV[5..] job ids (the store hands at most a few hundred per call)
-- Counts each job into the reports (includes/tally.lua) in the same step.
-- Returns one {job_id, idempotency_key, correlation_id} per job canceled.
local prefix, printer_id = ARGV[1], ARGV[2]
local now = now_ms()
local canceled = {}
for i = 5, #ARGV do
  local job_id = ARGV[i]
  local f = redis.call('HMGET', job_key(prefix, job_id), 'state', 'printer_id',
    'idempotency_key', 'correlation_id')
  if f[2] == printer_id and (f[1] == 'queued' or f[1] == 'leased') then
    if f[1] == 'queued' then
      redis.call('ZREM', queue_key(prefix, printer_id), job_id)
    else
      redis.call('ZREM', KEYS[1], job_id)
    end
    transition(prefix, job_id, f[1], 'canceled', ARGV[3], ARGV[4], now)
    tally(prefix, job_id)
    table.insert(canceled, {job_id, f[3] or '', f[4] or ''})
  end
end
return canceled
