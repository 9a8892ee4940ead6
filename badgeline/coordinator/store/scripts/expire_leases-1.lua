-- Return jobs whose lease expired before a start was granted to the head of
-- their queue (their original score puts them back where they were).
-- Granted jobs are not in the zset: they stay printing until their agent acks.
--
-- KEYS[1] lease expiry zset
-- ARGV[1] prefix  ARGV[2] max jobs per call  ARGV[3] wake channel  ARGV[4] actor
-- Returns one {job_id, printer_id, lease_id, idempotency_key, correlation_id}
-- per job returned to its queue, so that each return is logged with its trace.
local prefix = ARGV[1]
local now = now_ms()
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local returned = {}
for _, job_id in ipairs(expired) do
  redis.call('ZREM', KEYS[1], job_id)
  local key = job_key(prefix, job_id)
  local f = redis.call('HMGET', key, 'state', 'printer_id', 'score', 'lease_id',
    'idempotency_key', 'correlation_id')
  if f[1] == 'leased' then
    -- Remembered: a late `failed` report on it still counts as an attempt (ack-5.lua).
    redis.call('HSET', key, 'lease_id', '', 'expired_lease', f[4])
    transition(prefix, job_id, 'leased', 'queued', ARGV[4],
      'lease ' .. f[4] .. ' expired before start', now)
    enqueue(prefix, job_id, f[2], tonumber(f[3]), ARGV[3])
    table.insert(returned, {job_id, f[2], f[4], f[5] or '', f[6] or ''})
  end
end
return returned
