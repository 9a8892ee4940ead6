-- Grant the start of a print: the fence that keeps a badge from printing twice.
--
-- KEYS[1] job hash  KEYS[2] lease expiry zset
-- ARGV[1] prefix  ARGV[2] printer_id  ARGV[3] lease_id  ARGV[4] actor
-- Returns {code, fence_or_reason, idempotency_key, correlation_id}
--   1 granted now, 2 already granted to this lease (idempotent),
--   0 refused (reason: lease_revoked | already_printed | canceled | expired), -2 no such job.
-- A leased job past its deadline (expire_after_s) expires here, in the step that
-- refuses its start, whether or not the expiry sweep has come by yet.
local prefix = ARGV[1]
local fields = redis.call('HMGET', KEYS[1], 'state', 'lease_id', 'printer_id', 'fence', 'job_id',
  'idempotency_key', 'correlation_id', 'expires_ms')
local state = fields[1]
if not state then
  return {-2, 'not_found', '', ''}
end
local function reply(code, value)
  return {code, value, fields[6], fields[7]}
end
if state == 'printed' then
  return reply(0, 'already_printed')
end
if state == 'canceled' then
  return reply(0, 'canceled')
end
if state == 'expired' then
  return reply(0, 'expired')
end
if fields[2] ~= ARGV[3] or fields[3] ~= ARGV[2] then
  return reply(0, 'lease_revoked')
end
if state == 'printing' then
  return reply(2, tonumber(fields[4]))
end
if state ~= 'leased' then
  return reply(0, 'lease_revoked')
end
local now = now_ms()
local expires = tonumber(fields[8] or '')
if expires and expires <= now then
  expire_job(prefix, fields[5], 'leased', ARGV[4], now)
  tally(prefix, fields[5])
  return reply(0, 'expired')
end
local fence = redis.call('HINCRBY', KEYS[1], 'fence', 1)
redis.call('HSET', KEYS[1], 'granted_ms', now)
redis.call('ZREM', KEYS[2], fields[5])
-- The failover controller needs to know what each printer has in flight.
redis.call('SADD', printing_key(prefix, ARGV[2]), fields[5])
-- Only a lease that was granted can have printed: acks name one of these.
redis.call('SADD', job_key(prefix, fields[5]) .. ':grants', ARGV[3])
transition(prefix, fields[5], 'leased', 'printing', ARGV[4],
  'start granted to ' .. ARGV[3] .. ' fence ' .. fence, now)
return reply(1, fence)
