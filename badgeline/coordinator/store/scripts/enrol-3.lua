-- Exchange an enrolment code for an agent token, at most once per code.
--
-- KEYS[1] the code's hash key  KEYS[2] the new token's hash key
-- KEYS[3] the agent's index key (digest of the token last issued to it)
-- ARGV[1] prefix  ARGV[2] printer_id  ARGV[3] agent_id  ARGV[4] the new token's SHA-256
-- Returns {'ok', issued_ms, replaced 0|1} | {'invalid'} | {'used'} | {'expired'}
--   | {'wrong_printer', printer_id}. Only 'ok' writes anything.
local now = now_ms()
local code = redis.call('HMGET', KEYS[1], 'printer_id', 'expires_ms', 'used_ms')
if not code[1] then
  return {'invalid'}
end
if code[3] then
  return {'used'}
end
if tonumber(code[2]) <= now then
  return {'expired'}
end
if code[1] ~= ARGV[2] then
  return {'wrong_printer', code[1]}
end
-- Used up before anything else is written: no second exchange can pass the check above.
redis.call('HSET', KEYS[1], 'used_ms', now, 'used_by', ARGV[3])
local replaced = 0
local previous = redis.call('GET', KEYS[3])
if previous then
  -- Enrolling an agent again revokes the token it was given before.
  replaced = redis.call('DEL', ARGV[1] .. 'agent_token:' .. previous)
end
redis.call('HSET', KEYS[2], 'sha256', ARGV[4], 'printer_id', ARGV[2], 'agent_id', ARGV[3],
  'issued_ms', now)
redis.call('SET', KEYS[3], ARGV[4])
return {'ok', now, replaced}
