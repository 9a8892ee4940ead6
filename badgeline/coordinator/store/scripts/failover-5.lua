-- Execute a failover decision for one printer: move its queued and
-- leased-but-not-started jobs to healthy printers (least loaded first, never
-- past the high-water mark), park what has nowhere to go, and schedule the
-- acknowledgement check for the job it was printing. Records an immutable
-- decision. Replaying a decision is a no-op.
--
-- KEYS[1] printer hash  KEYS[2] printer queue  KEYS[3] lease expiry zset
-- KEYS[4] printer's printing set  KEYS[5] failover decision list
-- ARGV[1] prefix  ARGV[2] printer_id  ARGV[3] candidate printer ids (JSON list)
-- ARGV[4] high water  ARGV[5] actor  ARGV[6] wake channel  ARGV[7] ack grace ms
-- ARGV[8] mode: auto (the printer was declared dead) | drain (an operator asked)
-- ARGV[9] decision id for drains  ARGV[10] reason
-- Returns {code, decision JSON}: 1 executed, 0 already executed (replay) or not needed.
local prefix, printer_id = ARGV[1], ARGV[2]
local now = now_ms()
local decision_id
if ARGV[8] == 'auto' then
  local f = redis.call('HMGET', KEYS[1], 'state', 'dead_epoch', 'failed_over_epoch')
  local epoch, done = tonumber(f[2] or '0'), tonumber(f[3] or '0')
  if f[1] ~= 'dead' or epoch <= done then
    return {0, ''}
  end
  redis.call('HSET', KEYS[1], 'failed_over_epoch', epoch)
  decision_id = 'fo-' .. printer_id .. '-' .. epoch
else
  decision_id = ARGV[9]
end
local decision_key = prefix .. 'failover:' .. decision_id
if redis.call('EXISTS', decision_key) == 1 then
  return {0, ''}
end

-- Everything waiting for this printer, in print order.
local jobs = {}
local queued = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
for i = 1, #queued, 2 do
  table.insert(jobs, {id = queued[i], score = tonumber(queued[i + 1]), from = 'queued'})
end
for _, job_id in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  local f = redis.call('HMGET', job_key(prefix, job_id), 'printer_id', 'score', 'state')
  if f[1] == printer_id and f[3] == 'leased' then
    table.insert(jobs, {id = job_id, score = tonumber(f[2]), from = 'leased'})
  end
end
table.sort(jobs, function(a, b) return a.score < b.score end)

local candidates = cjson.decode(ARGV[3])
local high_water = tonumber(ARGV[4])
local moved, parked, targets, moved_to = {}, {}, {}, {}
for _, job in ipairs(jobs) do
  if job.from == 'queued' then
    redis.call('ZREM', KEYS[2], job.id)
  else
    redis.call('ZREM', KEYS[3], job.id)
  end
  local target = pick_target(prefix, candidates, high_water, now, printer_id)
  if target then
    move_job(prefix, job.id, job.from, target, ARGV[5],
      decision_id .. ': ' .. ARGV[10] .. ', moved from ' .. printer_id .. ' to ' .. target,
      now, ARGV[6])
    table.insert(moved, job.id)
    moved_to[job.id] = target
    targets[target] = (targets[target] or 0) + 1
  else
    park_job(prefix, job.id, job.from, ARGV[5],
      decision_id .. ': ' .. ARGV[10] .. ', no healthy printer with room', now)
    table.insert(parked, job.id)
  end
end

-- The job being printed may or may not have come out: wait for its ack first.
-- Its fence names this print attempt: the check must leave alone a later grant
-- of the same job (failed ack, retry, printing again) that the grace period overlaps.
local inflight = redis.call('SMEMBERS', KEYS[4])
for _, job_id in ipairs(inflight) do
  redis.call('ZADD', prefix .. 'inflight_checks', now + tonumber(ARGV[7]), job_id)
  local fence = redis.call('HGET', job_key(prefix, job_id), 'fence') or '0'
  redis.call('HSET', job_key(prefix, job_id), 'inflight_decision', decision_id,
    'inflight_fence', fence)
end

local decision = {
  decision_id = decision_id, dead_printer_id = printer_id, reason = ARGV[10],
  decided_at = now / 1000, drained_job_ids = moved, parked_job_ids = parked,
  targets = targets, moved_to = moved_to, inflight_job_ids = inflight, actor = ARGV[5],
}
-- (cjson encodes an empty table as {}; readers treat {} as an empty list.)
local encoded = cjson.encode(decision)
redis.call('SET', decision_key, encoded)
redis.call('LPUSH', KEYS[5], decision_id)
redis.call('LTRIM', KEYS[5], 0, 9999)
-- The list keeps the last 10000 decisions; the counter counts every one (/metrics).
count_printer_event(prefix, 'failover', printer_id)
return {1, encoded}
