-- Put failed jobs whose backoff is over back in line: on their own printer if
-- it is alive and has room, else on the least-loaded healthy peer, else parked.
--
-- KEYS[1] retry zset (job_id -> due ms)
-- ARGV[1] prefix  ARGV[2] candidate printer ids (JSON)  ARGV[3] high water
-- ARGV[4] actor  ARGV[5] wake channel
-- Returns a flat list {job_id, target printer or 'parked', ...}.
local prefix = ARGV[1]
local now = now_ms()
local high_water = tonumber(ARGV[3])
local back = {}
for _, job_id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 200)) do
  redis.call('ZREM', KEYS[1], job_id)
  local own = redis.call('HGET', job_key(prefix, job_id), 'printer_id')
  local own_state = redis.call('HGET', printer_key(prefix, own), 'state')
  local target = nil
  if own_state ~= 'dead' and redis.call('ZCARD', queue_key(prefix, own)) < high_water then
    target = own
  else
    target = pick_target(prefix, cjson.decode(ARGV[2]), high_water, now, own)
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
