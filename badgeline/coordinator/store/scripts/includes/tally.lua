-- Count one job into the operator's reports, from the job's current state:
-- accepted, shed, printed (by printer, hour and source), failed attempts (by
-- printer and reason), canceled, expired; and index it when it is flagged a possible
-- duplicate or held for an operator. The scripts that change what a report
-- counts (accept, ack, cancel, redrive) call it before they return, inside
-- their own atomic step, so a report can never miss a change whose request
-- died between the change and a separate tally. Markers on the job hash
-- (tally_*) make a repeat a no-op: a retried request never counts twice.
-- Key names mirror VenueKeys.stats_* in keys.py (same venue hash tag).
-- Returns {newly_printed (1|0), created_ms, printed_ms}.

-- Distinct failure reasons kept per venue: classified codes, or for agents
-- that send none their error texts, which vary (an unbounded hash would grow
-- with every new message).
local MAX_FAILURE_REASONS = 100

-- One more event of a printer's, for /metrics: counters only ever go up, so a
-- scrape of any replica reads the venue's count (VenueKeys.stats_printer_events).
local function count_printer_event(prefix, event, printer_id)
  redis.call('HINCRBY', prefix .. 'stats:printer_events', event .. '|' .. (printer_id or ''), 1)
end

local function tally(prefix, job_id)
  local job = job_key(prefix, job_id)
  local totals = prefix .. 'stats:totals'
  local by_printer = prefix .. 'stats:by_printer'
  local f = redis.call('HMGET', job, 'state', 'created_ms', 'printed_ms', 'printed_by',
    'source', 'reprint_of', 'dead_reason', 'failed_lease', 'last_error', 'printer_id',
    'possible_duplicate', 'tally_accepted', 'tally_shed', 'tally_printed', 'tally_failed_lease',
    'tally_canceled', 'failure_reason', 'tally_expired')
  local state = f[1]
  if not state then
    return {0, 0, 0}
  end

  -- A job shed at submission (dead_reason backpressure) has not been accepted;
  -- it is, once a redrive queues it (the redrive clears dead_reason).
  local accepted = f[12] == '1'
  if not accepted and f[7] ~= 'backpressure' then
    accepted = true
    redis.call('HSET', job, 'tally_accepted', 1)
    redis.call('HINCRBY', totals, 'accepted', 1)
    if f[6] and f[6] ~= '' then
      redis.call('HINCRBY', totals, 'reprints', 1)
    end
  end
  if f[7] == 'backpressure' and f[13] ~= '1' then
    redis.call('HSET', job, 'tally_shed', 1)
    redis.call('HINCRBY', totals, 'shed', 1)
    count_printer_event(prefix, 'shed', f[10])
  end

  local newly_printed = 0
  if state == 'printed' and f[14] ~= '1' then
    newly_printed = 1
    redis.call('HSET', job, 'tally_printed', 1)
    redis.call('HINCRBY', totals, 'printed', 1)
    redis.call('HINCRBY', by_printer, 'printed|' .. (f[4] or f[10] or ''), 1)
    local hour = math.floor(tonumber(f[3] or f[2]) / 3600000) * 3600
    redis.call('HINCRBY', prefix .. 'stats:by_hour', tostring(hour), 1)
    redis.call('HINCRBY', prefix .. 'stats:by_source', f[5] or 'unknown', 1)
    -- Canceled, then a late ack from an earlier grant says it printed: the print is
    -- the fact, and a job counted both ways leaves accepted short of its finishes.
    if f[16] == '1' then
      redis.call('HSET', job, 'tally_canceled', 0)
      redis.call('HINCRBY', totals, 'canceled', -1)
    end
    -- The same for an expired job whose earlier attempt reports its print late.
    if f[18] == '1' then
      redis.call('HSET', job, 'tally_expired', 0)
      redis.call('HINCRBY', totals, 'expired', -1)
    end
  end

  -- Each failed attempt leaves its lease in failed_lease: count each lease once.
  if f[8] and f[8] ~= '' and f[8] ~= f[15] then
    local reasons = prefix .. 'stats:failure_reasons'
    redis.call('HSET', job, 'tally_failed_lease', f[8])
    redis.call('HINCRBY', totals, 'failed_attempts', 1)
    redis.call('HINCRBY', by_printer, 'failed|' .. (f[10] or ''), 1)
    -- The agent's classified reason when it sent one (a short, bounded set of
    -- codes); the error text from agents that send none.
    local reason = f[17]
    if not reason or reason == '' then reason = string.sub(f[9] or '', 1, 120) end
    if reason == '' then reason = 'unknown' end
    if redis.call('HEXISTS', reasons, reason) == 0
        and redis.call('HLEN', reasons) >= MAX_FAILURE_REASONS then
      reason = 'other'
    end
    redis.call('HINCRBY', reasons, reason, 1)
  end

  if state == 'canceled' and accepted and f[16] ~= '1' then
    redis.call('HSET', job, 'tally_canceled', 1)
    redis.call('HINCRBY', totals, 'canceled', 1)
  end
  if state == 'expired' and accepted and f[18] ~= '1' then
    redis.call('HSET', job, 'tally_expired', 1)
    redis.call('HINCRBY', totals, 'expired', 1)
  end
  if f[11] == '1' then
    redis.call('SADD', prefix .. 'possible_duplicates', job_id)
  end
  if state == 'held' then
    redis.call('ZADD', prefix .. 'held', 'NX', tonumber(f[2]), job_id)
  end
  return {newly_printed, tonumber(f[2]) or 0, tonumber(f[3]) or 0}
end
