-- Expire the jobs whose deadline (expire_after_s) has passed while they wait for a
-- print to start (queued, leased, retrying, parked). A due job in any other state
-- (printing, held, closed) only leaves the index: transition() puts it back when it
-- waits again, and then it expires. start-2.lua and lease-3.lua check the deadline
-- themselves, so a job between two sweeps still never starts late.
--
-- KEYS[1] expiring zset (job_id -> deadline ms, Redis clock)
-- ARGV[1] prefix  ARGV[2] most jobs per call  ARGV[3] actor
-- Returns one {job_id, printer_id, previous state, idempotency_key, correlation_id}
-- per job expired, so that each is logged with its trace.
local prefix = ARGV[1]
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local expired = {}
for _, job_id in ipairs(due) do
  redis.call('ZREM', KEYS[1], job_id)
  local f = redis.call('HMGET', job_key(prefix, job_id), 'state', 'printer_id',
    'idempotency_key', 'correlation_id')
  if f[1] and WAITING_STATES[f[1]] then
    expire_job(prefix, job_id, f[1], ARGV[3], now)
    tally(prefix, job_id)
    table.insert(expired, {job_id, f[2] or '', f[1], f[3] or '', f[4] or ''})
  end
end
return expired
