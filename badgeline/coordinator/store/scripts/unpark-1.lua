-- Dispatch parked jobs (and due retries) as soon as a healthy printer has room.
--
-- KEYS[1] parked zset (job_id -> score)
-- ARGV[1] prefix  ARGV[2] candidates by printer (JSON {printer: [ids], '*': [ids]})
-- ARGV[3] high water
-- ARGV[4] actor  ARGV[5] wake channel  ARGV[6] max jobs
-- Returns a flat list {job_id, target, ...} of the jobs dispatched.
local prefix = ARGV[1]
local now = now_ms()
local by_printer = cjson.decode(ARGV[2])
local dispatched = {}
for _, job_id in ipairs(redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[6]) - 1)) do
  -- Each job stays in its printer's pool: one pool with no room holds back no other.
  local printer_id = redis.call('HGET', job_key(prefix, job_id), 'printer_id')
  local target = pick_target(prefix, pool_candidates(by_printer, printer_id),
    tonumber(ARGV[3]), now, nil)
  if target then
    redis.call('ZREM', KEYS[1], job_id)
    move_job(prefix, job_id, 'parked', target, ARGV[4], 'unparked: ' .. target .. ' is healthy',
      now, ARGV[5])
    table.insert(dispatched, job_id)
    table.insert(dispatched, target)
  end
end
return dispatched
