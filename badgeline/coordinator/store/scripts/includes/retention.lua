-- What the retention scripts share (retire_claim-1.lua, retire-4.lua).

-- A dead letter or failed job of the same attendee that a redrive could still
-- queue and that this job would stop there (redrive-4.lua: a job accepted under
-- the same key, or a reprint of it). While that one waits in Redis this one must
-- stay, or the redrive would no longer find it and print a badge the attendee
-- already has. Returns the blocking job's id, or false.
local function redrive_blocker(prefix, job_id)
  local key = job_key(prefix, job_id)
  local f = redis.call('HMGET', key, 'dead_reason', 'reprint_of', 'idempotency_key')
  if f[1] == 'backpressure' then
    return false  -- a job shed at submission stops no redrive
  end
  local attendee = job_payload(key).attendee_id or ''
  for _, other in ipairs(redis.call('SMEMBERS', prefix .. 'attendee:' .. attendee)) do
    if other ~= job_id then
      local g = redis.call('HMGET', job_key(prefix, other), 'state', 'dead_reason',
        'idempotency_key')
      local redrivable = (g[1] == 'dead_lettered' or g[1] == 'failed') and g[2] ~= 'permanent'
      if redrivable and (f[2] == other or g[3] == f[3]) then
        return other
      end
    end
  end
  return false
end
