-- Lease the head job(s) of a printer queue to that printer's agent.
--
-- KEYS[1] printer queue  KEYS[2] lease expiry zset  KEYS[3] printer hash
-- ARGV[1] prefix  ARGV[2] printer_id  ARGV[3] max jobs  ARGV[4] lease ttl ms
-- ARGV[5] lease id prefix (unique per call)  ARGV[6] actor
-- Returns {pause_left_ms, {JSON {job_id, lease_id, payload, attempts, possible_duplicate,
-- correlation_id}, possibly none}}: pause_left_ms is how
-- long the printer stays paused (0 when it is not). A timed pause ends with no
-- wake-up (its end is only a time in the printer hash), so a long-poll parked on
-- a paused printer looks again when it ends (api/agent.py, lease).
local prefix, printer_id = ARGV[1], ARGV[2]
local now = now_ms()
local p = redis.call('HMGET', KEYS[3], 'paused_until_ms', 'state')
-- A dead printer (jammed, out of paper) gets nothing until it has recovered.
if p[2] == 'dead' then
  return {0, {}}
end
local paused_until = tonumber(p[1] or '0')
if paused_until > now then
  return {paused_until - now, {}}
end

local ttl, max_jobs = tonumber(ARGV[4]), tonumber(ARGV[3])
local leased = {}
-- An entry whose job is no longer `queued` is dropped here; a job past its deadline
-- (expire_after_s) expires here instead of being leased. Pop on past such
-- entries until the batch is full or the queue is empty: an empty answer must mean an
-- empty queue, or the agent's long-poll parks while work is waiting (and enqueue
-- publishes a wake-up only for a queue that was empty).
while #leased < max_jobs do
  local popped = redis.call('ZPOPMIN', KEYS[1], max_jobs - #leased)
  if #popped == 0 then break end
  for i = 1, #popped, 2 do
    local job_id = popped[i]
    local key = job_key(prefix, job_id)
    local state = redis.call('HGET', key, 'state')
    if state == 'queued' and past_deadline(prefix, job_id, now) then
      -- Its deadline passed before the expiry sweep came by: it is never handed out.
      expire_job(prefix, job_id, 'queued', ARGV[6], now)
      tally(prefix, job_id)
    elseif state == 'queued' then
      local lease_id = ARGV[5] .. '-' .. (#leased + 1)
      redis.call('HSET', key, 'lease_id', lease_id, 'lease_expires_ms', now + ttl,
        'printer_id', printer_id)
      redis.call('ZADD', KEYS[2], now + ttl, job_id)
      transition(prefix, job_id, 'queued', 'leased', ARGV[6], 'leased as ' .. lease_id, now)
      local fields = redis.call('HMGET', key, 'payload', 'attempts', 'possible_duplicate',
        'correlation_id')
      -- The payload goes out as it was accepted, with what this lease adds.
      table.insert(leased, cjson.encode({
        job_id = job_id, lease_id = lease_id, payload = cjson.decode(fields[1] or '{}'),
        attempts = tonumber(fields[2]), possible_duplicate = fields[3] == '1',
        correlation_id = fields[4]}))
    end
  end
end
return {0, leased}
