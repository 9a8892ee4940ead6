-- Redrive a dead-lettered job through the same dedupe gate as acceptance.
--
-- KEYS[1] job hash  KEYS[2] idempotency key  KEYS[3] dead-letter zset  KEYS[4] acceptance seq
-- ARGV[1] prefix  ARGV[2] dedupe window s  ARGV[3] high water  ARGV[4] actor  ARGV[5] wake channel
-- ARGV[6] candidates by printer (JSON {printer: [ids], '*': [ids]}, from
--   FailoverController.candidates_by_printer): where the job may go if its printer is dead
-- Counts the job into the reports (includes/tally.lua) in the same step.
-- Returns {code, detail}: 1 queued (detail 'parked' when its printer is dead and no
--   peer of its pool, or of the venue for a printer in no pool, can take it),
--   2 suppressed (key taken by, or reprinted as, detail job id),
--   3 still over the high-water mark, 4 refused: it failed for a permanent reason
--   (detail = the reason code), which no retry can change,
--   -1 not dead-lettered (detail = state), -2 no such job.
local prefix = ARGV[1]
local f = redis.call('HMGET', KEYS[1], 'state', 'printer_id', 'payload_hash', 'job_id',
  'idempotency_key', 'dead_reason', 'failure_reason')
local state, printer_id, job_id = f[1], f[2], f[4]
if not state then
  return {-2, 'not_found'}
end
if state ~= 'dead_lettered' and state ~= 'failed' then
  return {-1, state}
end
if f[6] == 'permanent' then
  return {4, f[7] or ''}
end
local payload = job_payload(KEYS[1])
local now = now_ms()
local claimed = redis.call('GET', KEYS[2])
local other, why = nil, 'key already accepted as '
if claimed and string.sub(claimed, 1, #job_id + 1) ~= job_id .. '|' then
  other = string.sub(claimed, 1, string.find(claimed, '|', 1, true) - 1)
else
  -- Among the attendee's jobs (each accepted, not only shed): a reprint of this
  -- one, which the desk made because it failed, is its badge; and once the key
  -- has expired with the dedupe window (a dead letter can outlive it), a job
  -- accepted under the same key still wins. Else an end-of-day redrive prints a
  -- badge the attendee already has.
  local ids = redis.call('SMEMBERS', prefix .. 'attendee:' .. (payload.attendee_id or ''))
  table.sort(ids)
  for _, id in ipairs(ids) do
    if id ~= job_id then
      local g = redis.call('HMGET', job_key(prefix, id), 'idempotency_key', 'dead_reason',
        'reprint_of')
      if g[2] ~= 'backpressure' then
        if g[3] == job_id then
          other, why = id, 'reprinted as '
          break
        elseif not claimed and g[1] == f[5] then
          other = id
          break
        end
      end
    end
  end
end
if other then
  redis.call('ZREM', KEYS[3], job_id)
  transition(prefix, job_id, state, 'canceled', ARGV[4], 'redrive suppressed: ' .. why .. other,
    now)
  tally(prefix, job_id)
  return {2, other}
end
local high_water = tonumber(ARGV[3])
local dead = redis.call('HGET', printer_key(prefix, printer_id), 'state') == 'dead'
if dead then
  -- Its printer died meanwhile: send it to a healthy peer instead of a dead queue,
  -- one its failover would have sent it to (the job stays in its printer's pool).
  local peer = pick_target(prefix, pool_candidates(cjson.decode(ARGV[6]), printer_id),
    high_water, now, printer_id)
  if peer then
    printer_id, dead = peer, false
    redis.call('HSET', KEYS[1], 'printer_id', peer)
  end
end
local depth = redis.call('ZCARD', queue_key(prefix, printer_id))
if not dead and depth >= high_water then
  return {3, tostring(depth)}
end
local seq = redis.call('INCR', KEYS[4])
local score = tonumber(payload.priority) * 4294967296 + seq
redis.call('HSET', KEYS[1], 'score', score, 'seq', seq, 'attempts', 0, 'lease_id', '',
  'dedupe_window_s', ARGV[2])
redis.call('HDEL', KEYS[1], 'dead_reason', 'dead_ms')
-- Open again: its claim waits for it to close again (transition() in common.lua).
redis.call('SET', KEYS[2], job_id .. '|' .. f[3])
redis.call('ZREM', KEYS[3], job_id)
transition(prefix, job_id, state, 'queued', ARGV[4], 'redriven from the dead-letter list', now)
if dead then
  -- No peer can take it, and a dead printer's queue moves only at its next
  -- failover: parked (as accept does), it goes to the first healthy printer.
  park_job(prefix, job_id, 'queued', ARGV[4],
    'printer ' .. printer_id .. ' is dead and no peer can take it', now)
  tally(prefix, job_id)
  return {1, 'parked'}
end
enqueue(prefix, job_id, printer_id, score, ARGV[5])
tally(prefix, job_id)
return {1, 'queued'}
