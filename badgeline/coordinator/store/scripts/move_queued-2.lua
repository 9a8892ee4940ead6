-- Move one queued job to another printer's queue, keeping its id, key and
-- score; refused unless the job is still queued where the caller saw it and
-- the target is healthy with room. Used by rebalance.
--
-- KEYS[1] source queue  KEYS[2] target queue
-- ARGV[1] prefix  ARGV[2] job_id  ARGV[3] target printer  ARGV[4] high water
-- ARGV[5] actor  ARGV[6] wake channel  ARGV[7] reason
-- Returns 1 moved, 0 refused.
local prefix, job_id, target = ARGV[1], ARGV[2], ARGV[3]
local now = now_ms()
if not redis.call('ZSCORE', KEYS[1], job_id) then
  return 0
end
if pick_target(prefix, {target}, tonumber(ARGV[4]), now, nil) ~= target then
  return 0
end
redis.call('ZREM', KEYS[1], job_id)
move_job(prefix, job_id, 'queued', target, ARGV[5], ARGV[7], now, ARGV[6])
return 1
