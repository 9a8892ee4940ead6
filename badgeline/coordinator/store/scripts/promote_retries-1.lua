-- Put failed jobs whose backoff is over back in line: on their own printer if
-- it is alive, not paused and has room, else on the least-loaded healthy peer,
-- else parked.
--
-- KEYS[1] retry zset (job_id -> due ms)
-- ARGV[1] prefix  ARGV[2] candidates by printer (JSON {printer: [ids], '*': [ids]})
-- ARGV[3] high water
-- ARGV[4] actor  ARGV[5] wake channel
-- Returns a flat list {job_id, target printer or 'parked', ...}.
local prefix = ARGV[1]
local now = now_ms()
local high_water = tonumber(ARGV[3])
local back = {}
local by_printer = cjson.decode(ARGV[2])
for _, job_id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 200)) do
  redis.call('ZREM', KEYS[1], job_id)
  local own = redis.call('HGET', job_key(prefix, job_id), 'printer_id')
  -- A paused printer (a drain pauses it for good) leases nothing: a retry put
  -- back in its queue would wait there until an operator resumes it.
  local p = redis.call('HMGET', printer_key(prefix, own), 'state', 'paused_until_ms')
  local usable = p[1] ~= 'dead' and tonumber(p[2] or '0') <= now
  local target = nil
  if usable and redis.call('ZCARD', queue_key(prefix, own)) < high_water then
    target = own
  else
    target = pick_target(prefix, pool_candidates(by_printer, own), high_water, now, own)
  end
  if target then
    move_job(prefix, job_id, 'retrying', target, ARGV[4], 'retry backoff over', now, ARGV[5])
  else
    park_job(prefix, job_id, 'retrying', ARGV[4], 'retry due but no printer with room', now)
    target = 'parked'
  end
  table.insert(back, job_id)
  table.insert(back, target)
end
return back
