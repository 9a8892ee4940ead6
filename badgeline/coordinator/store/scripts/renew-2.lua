-- Renew a lease its agent still holds, before it expires: a badge waiting its turn
-- behind a slow printer (a card printer takes 30 s a badge) keeps its place.
--
-- KEYS[1] job hash  KEYS[2] lease expiry zset
-- ARGV[1] printer_id  ARGV[2] lease_id  ARGV[3] lease ttl ms
-- Returns {code, state}: 1 renewed (the lease now runs ttl ms from now), 0 not renewed
--   (the lease is no longer the job's current one, or the job left `leased`: the
--   agent must not ask for its start), -2 no such job.
local f = redis.call('HMGET', KEYS[1], 'state', 'lease_id', 'printer_id', 'job_id')
local state = f[1]
if not state then
  return {-2, 'not_found'}
end
if state ~= 'leased' or f[2] ~= ARGV[2] or f[3] ~= ARGV[1] then
  return {0, state}
end
local expires = now_ms() + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'lease_expires_ms', expires)
redis.call('ZADD', KEYS[2], expires, f[4])
return {1, state}
