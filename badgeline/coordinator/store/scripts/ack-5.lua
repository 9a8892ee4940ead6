-- Record an agent's report on a job: printed, failed or uncertain.
--
-- KEYS[1] job hash  KEYS[2] job prints set  KEYS[3] lease expiry zset
-- KEYS[4] printed-twice set  KEYS[5] dead-letter zset
-- ARGV[1] prefix  ARGV[2] printer_id  ARGV[3] lease_id  ARGV[4] result
-- ARGV[5] error text  ARGV[6] max attempts  ARGV[7] actor  ARGV[8] wake channel
-- ARGV[9] uncertain policy: reprint | hold
-- ARGV[10] retry backoff unit ms  ARGV[11] retry backoff cap ms  ARGV[12] jitter factor
-- ARGV[13] failure reason code ('' when none)  ARGV[14] '1' when that reason is permanent
-- Returns {code, state, idempotency_key, correlation_id, newly_printed, created_ms, printed_ms}
-- (the last three from includes/tally.lua, which counts the job into the reports;
-- uncertain attempts, possible duplicates and extra prints are counted per printer
-- in stats:printer_events, built from the prefix):
--   code 1 recorded, 0 already recorded, 3 stray (a printed ack from a lease that
--   was never granted this job: it cannot have printed it), -2 no such job.
--
-- A `failed` ack from the lease that expired last (an agent that gave up on a
-- badge too late) still counts as an attempt, once: else a badge that always
-- outlasts its lease would come back to the head of its queue for ever.
local prefix, printer_id, lease_id, result = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local f = redis.call('HMGET', KEYS[1], 'state', 'lease_id', 'printer_id', 'score',
  'job_id', 'idempotency_key', 'correlation_id', 'expired_lease')
local state, current_lease, current_printer = f[1], f[2], f[3]
if not state then
  return {-2, 'not_found', '', ''}
end
local job_id = f[5]
local now = now_ms()

local function answer(code, new_state)
  local counted = tally(prefix, job_id)
  return {code, new_state, f[6], f[7], counted[1], counted[2], counted[3]}
end

local function leave_current_place()
  if state == 'queued' then
    redis.call('ZREM', queue_key(prefix, current_printer), job_id)
  elseif state == 'leased' then
    redis.call('ZREM', KEYS[3], job_id)
  elseif state == 'printing' then
    redis.call('SREM', printing_key(prefix, current_printer), job_id)
  elseif state == 'parked' then
    redis.call('ZREM', prefix .. 'parked', job_id)
  elseif state == 'retrying' then
    redis.call('ZREM', prefix .. 'retry', job_id)
  elseif state == 'held' then
    redis.call('ZREM', prefix .. 'held', job_id)
  elseif state == 'failed' or state == 'dead_lettered' then
    -- a late printed ack: the badge exists, so there is nothing left to redrive
    redis.call('ZREM', KEYS[5], job_id)
  end
end

if result == 'printed' then
  if redis.call('SISMEMBER', KEYS[1] .. ':grants', lease_id) == 0 then
    return {3, state, f[6], f[7]}
  end
  -- A print is a physical fact: record it even on a revoked lease, which is how
  -- reconciliation learns about a badge that came out twice.
  if redis.call('SADD', KEYS[2], lease_id) == 0 then
    return answer(0, state)
  end
  if redis.call('SCARD', KEYS[2]) > 1 then
    redis.call('SADD', KEYS[4], job_id)
    count_printer_event(prefix, 'duplicate_print', printer_id)
  end
  redis.call('HSET', KEYS[1], 'printed_ms', now, 'printed_by', printer_id)
  redis.call('SREM', printing_key(prefix, printer_id), job_id)
  local how = 'printed by ' .. printer_id .. ' under ' .. lease_id
  if lease_id ~= current_lease then
    how = how .. ' (late ack on a revoked lease)'
  end
  if state == 'printed' then
    transition(prefix, job_id, state, 'printed', ARGV[7], 'another print reported: ' .. how, now)
  else
    leave_current_place()
    transition(prefix, job_id, state, 'printed', ARGV[7], how, now)
  end
  return answer(1, 'printed')
end

local reason, permanent = ARGV[13], ARGV[14] == '1'

local function fail_for_good(why)
  redis.call('HSET', KEYS[1], 'dead_reason', permanent and 'permanent' or 'max_attempts',
    'dead_ms', now)
  redis.call('ZADD', KEYS[5], now, job_id)
  transition(prefix, job_id, state, 'failed', ARGV[7], why, now)
  return answer(1, 'failed')
end

local function why_failed(attempts)
  if permanent then
    return 'print failed (' .. reason .. '), which no retry can change: ' .. ARGV[5]
  end
  return 'print failed ' .. attempts .. ' times, last: ' .. ARGV[5]
end

if result == 'failed' and lease_id ~= current_lease and lease_id == f[8] then
  -- A late report on the lease that expired: count it, once (the field is cleared).
  local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
  redis.call('HSET', KEYS[1], 'last_error', ARGV[5], 'failure_reason', reason,
    'failed_lease', lease_id, 'expired_lease', '')
  local waiting = state == 'queued' or state == 'retrying' or state == 'parked'
  if waiting and (permanent or attempts >= tonumber(ARGV[6])) then
    leave_current_place()
    return fail_for_good(why_failed(attempts) .. ' (reported after its lease expired)')
  end
  return answer(1, state)
end

-- failed and uncertain only act on the lease that currently holds the job.
if lease_id ~= current_lease or printer_id ~= current_printer
    or (state ~= 'printing' and state ~= 'leased') then
  return answer(0, state)
end
leave_current_place()

if result == 'uncertain' then
  count_printer_event(prefix, 'uncertain', current_printer)
  if ARGV[9] == 'hold' then
    transition(prefix, job_id, state, 'held', ARGV[7],
      'agent cannot tell whether it printed (' .. ARGV[5] .. '); held for an operator', now)
    redis.call('ZADD', prefix .. 'held', now, job_id)
    return answer(1, 'held')
  end
  redis.call('HSET', KEYS[1], 'possible_duplicate', 1, 'lease_id', '')
  count_printer_event(prefix, 'possible_duplicate', current_printer)
  transition(prefix, job_id, state, 'queued', ARGV[7],
    'agent cannot tell whether it printed (' .. ARGV[5] .. '); re-dispatched', now)
  local p = redis.call('HMGET', printer_key(prefix, current_printer), 'state', 'paused_until_ms')
  if p[1] == 'dead' or tonumber(p[2] or '0') > now then
    -- Its printer died (its failover may already have run) or is paused (a drain
    -- pauses it for good): a job queued there would wait for it to come back.
    -- Parked, it goes to the first healthy one.
    park_job(prefix, job_id, 'queued', ARGV[7],
      'printer ' .. current_printer .. ' is dead or paused', now)
    return answer(1, 'parked')
  end
  enqueue(prefix, job_id, current_printer, tonumber(f[4]), ARGV[8])
  return answer(1, 'queued')
end

local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
redis.call('HSET', KEYS[1], 'last_error', ARGV[5], 'failed_lease', lease_id, 'lease_id', '',
  'failure_reason', reason)
if permanent or attempts >= tonumber(ARGV[6]) then
  return fail_for_good(why_failed(attempts))
end
-- Back off min(2^n units, cap), with jitter so that a printer's failed
-- batch does not come back as one burst.
local delay = math.min(math.pow(2, attempts) * tonumber(ARGV[10]), tonumber(ARGV[11]))
delay = math.floor(delay * tonumber(ARGV[12]))
redis.call('ZADD', prefix .. 'retry', now + delay, job_id)
transition(prefix, job_id, state, 'retrying', ARGV[7],
  'print failed (attempt ' .. attempts .. '): ' .. ARGV[5] .. '; retry in ' .. delay .. ' ms', now)
return answer(1, 'retrying')
