-- Claim closed jobs past their retention for the audit export (control/retention.py).
-- The claimant writes them to disk, fsyncs, then removes them (retire-4.lua).
--
-- KEYS[1] closed zset (job_id -> when the job last closed, ms)
-- ARGV[1] prefix  ARGV[2] retention ms  ARGV[3] most jobs claimed
-- ARGV[4] claim token (random, the claimant's)  ARGV[5] how long the claim holds, ms
-- Returns {now_ms, job, ...}, each job {job_id, fields (flat, as HGETALL), history,
--   prints, grants, attempt, first claimed ms}. An attempt above 1 means an earlier
--   claim ran out: its claimant may have written the job before it died.
-- A job that another claimant holds (claim not run out) is skipped, and the
-- jobs after it are looked at (up to SCAN_FACTOR x the most claimed): a batch held
-- by a claimant that died does not stop the others. One that a pending redrive
-- needs (includes/retention.lua) waits until after that dead letter.
local SCAN_FACTOR = 4
local prefix, limit, token, hold = ARGV[1], tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[5])
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]),
  'LIMIT', 0, limit * SCAN_FACTOR)
local claimed = {now}
for _, job_id in ipairs(due) do
  if #claimed > limit then break end
  local key = job_key(prefix, job_id)
  local f = redis.call('HMGET', key, 'state', 'retire_claim', 'retire_until_ms')
  if not f[1] or not CLOSED_STATES[f[1]] then
    redis.call('ZREM', KEYS[1], job_id)  -- no such job, or open again: nothing to retire
  elseif f[2] and f[2] ~= '' and tonumber(f[3] or '0') > now then
    -- another claimant holds it
  else
    local blocker = redrive_blocker(prefix, job_id)
    if blocker then
      local after = tonumber(redis.call('ZSCORE', KEYS[1], blocker) or now)
      redis.call('ZADD', KEYS[1], after + 1, job_id)
    else
      redis.call('HSET', key, 'retire_claim', token, 'retire_until_ms', now + hold)
      redis.call('HSETNX', key, 'retire_first_ms', now)
      local attempt = redis.call('HINCRBY', key, 'retire_attempts', 1)
      table.insert(claimed, {
        job_id, redis.call('HGETALL', key), redis.call('LRANGE', key .. ':history', 0, -1),
        redis.call('SMEMBERS', key .. ':prints'), redis.call('SMEMBERS', key .. ':grants'),
        attempt, tonumber(redis.call('HGET', key, 'retire_first_ms')),
      })
    end
  end
end
return claimed
