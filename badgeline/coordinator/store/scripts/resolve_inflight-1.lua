-- The acknowledgement check for jobs that were printing on a failed printer,
-- once their ack grace period is over. Acked (printed) jobs are left alone;
-- unacked ones are re-dispatched flagged possible_duplicate, or held, by policy.
--
-- KEYS[1] inflight check zset (job_id -> due ms)
-- ARGV[1] prefix  ARGV[2] candidates by printer (JSON {printer: [ids], '*': [ids]})
-- ARGV[3] high water
-- ARGV[4] policy: reprint | hold  ARGV[5] actor  ARGV[6] wake channel
-- Returns a flat list {job_id, decision_id, outcome, printer_id, ...}; outcome is
--   acked (printed by the dead printer) | printed_elsewhere (another printer printed it
--   after an uncertain report sent it on) | failed_back | reprinted | parked | held,
--   and printer_id, where the job is now.
local prefix = ARGV[1]
local now = now_ms()
local results = {}
local by_printer = cjson.decode(ARGV[2])
for _, job_id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 100)) do
  redis.call('ZREM', KEYS[1], job_id)
  local key = job_key(prefix, job_id)
  local f = redis.call('HMGET', key, 'state', 'printer_id', 'inflight_decision', 'printed_by',
    'fence', 'inflight_fence')
  local decision_key = prefix .. 'failover:' .. (f[3] or '')
  local raw = redis.call('GET', decision_key)
  local decision = raw and cjson.decode(raw)
  local outcome
  local now_at = f[2] or ''
  if f[1] == 'printed' then
    outcome = 'acked'
    if decision and f[4] and f[4] ~= decision['dead_printer_id'] then
      outcome = 'printed_elsewhere'
    end
  elseif f[1] ~= 'printing' or (f[6] and f[5] ~= f[6]) then
    -- Not printing, or printing under a later grant (fence) than the attempt the
    -- failover saw: that attempt came back, and the later one has its own ack.
    outcome = 'failed_back'
  else
    redis.call('SREM', printing_key(prefix, f[2]), job_id)
    -- Its outcome is unknown: counted against the printer it was printing on.
    count_printer_event(prefix, 'uncertain', f[2])
    local why = f[3] .. ': no ack from ' .. f[2] .. ' within the grace period'
    if ARGV[4] == 'hold' then
      transition(prefix, job_id, 'printing', 'held', ARGV[5], why .. '; held for an operator', now)
      redis.call('ZADD', prefix .. 'held', now, job_id)
      outcome = 'held'
    else
      redis.call('HSET', key, 'possible_duplicate', 1)
      count_printer_event(prefix, 'possible_duplicate', f[2])
      local target = pick_target(prefix, pool_candidates(by_printer, f[2]), tonumber(ARGV[3]),
        now, f[2])
      if target then
        move_job(prefix, job_id, 'printing', target, ARGV[5],
          why .. '; re-dispatched to ' .. target .. ' as a possible duplicate', now, ARGV[6])
        outcome = 'reprinted'
        now_at = target
      else
        park_job(prefix, job_id, 'printing', ARGV[5], why .. '; parked, no healthy printer', now)
        outcome = 'parked'
      end
    end
  end
  if decision then
    decision['inflight_resolution'] = decision['inflight_resolution'] or {}
    decision['inflight_resolution'][job_id] = outcome
    redis.call('SET', decision_key, cjson.encode(decision))
  end
  table.insert(results, job_id)
  table.insert(results, f[3] or '')
  table.insert(results, outcome)
  table.insert(results, now_at)
  tally(prefix, job_id)  -- indexes it as a possible duplicate or held
end
return results
