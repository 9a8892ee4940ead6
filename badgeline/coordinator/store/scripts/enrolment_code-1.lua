-- Create a single-use enrolment code (stored by its SHA-256, never the code).
--
-- KEYS[1] the code's hash key
-- ARGV[1] printer_id  ARGV[2] ttl_ms  ARGV[3] how long a used or expired code is
-- remembered after its expiry (ms), so a reuse is told 'used'/'expired', not 'invalid'
-- ARGV[4] actor
-- Returns {1, expires_ms}, or {0, 0} if the key exists (a 144-bit collision: retry).
local now = now_ms()
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, 0}
end
local expires = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'printer_id', ARGV[1], 'expires_ms', expires, 'created_ms', now,
  'created_by', ARGV[4])
redis.call('PEXPIREAT', KEYS[1], expires + tonumber(ARGV[3]))
return {1, expires}
