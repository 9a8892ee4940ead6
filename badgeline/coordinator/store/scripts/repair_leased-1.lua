-- Drop members of the printers' leased sets whose job is no longer leased to
-- that printer. transition() keeps the sets exact, but a coordinator of an
-- older release (in a rolling upgrade) changes job states without touching
-- them, and a stale member would count as load for ever, steering routed
-- jobs away from a printer that is in fact idle.
--
-- KEYS[1] printers set
-- ARGV[1] prefix
-- Returns the number of members dropped.
local prefix = ARGV[1]
local dropped = 0
for _, printer_id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = leased_key(prefix, printer_id)
  for _, job_id in ipairs(redis.call('SMEMBERS', key)) do
    local f = redis.call('HMGET', job_key(prefix, job_id), 'state', 'printer_id')
    if f[1] ~= 'leased' or f[2] ~= printer_id then
      redis.call('SREM', key, job_id)
      dropped = dropped + 1
    end
  end
end
return dropped
