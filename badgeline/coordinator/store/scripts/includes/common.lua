-- Shared helpers, prepended to every script by store/script_loader.py.
-- Time always comes from the Redis server: coordinator replicas' clocks differ.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function job_key(prefix, job_id)
  return prefix .. 'job:' .. job_id
end

-- A job's fixed payload (PrintJob in badgeline/protocol/models.py), stored as one
-- JSON field: attendee_id, badge_pdf_ref, printer_target, priority, idempotency_key.
local function job_payload(key)
  return cjson.decode(redis.call('HGET', key, 'payload') or '{}')
end

local function queue_key(prefix, printer_id)
  return prefix .. 'queue:' .. printer_id
end

-- Every state change goes through here so that no change escapes the trail.
local function leased_key(prefix, printer_id)
  return prefix .. 'leased:' .. printer_id
end

-- Mirrors VenueKeys.idempotency in keys.py.
local function claim_key(prefix, idempotency_key)
  return prefix .. 'idem:' .. idempotency_key
end

-- States after which a job does nothing more unless an operator redrives it.
local CLOSED_STATES = {printed = true, canceled = true, failed = true, dead_lettered = true,
  expired = true}

-- States of a job waiting for a print to start: a job with a deadline (expires_ms,
-- from expire_after_s) sits in the expiring index (VenueKeys.expiring) while in
-- one of them, and expires there once its deadline passes (expire_jobs-1.lua).
local WAITING_STATES = {queued = true, leased = true, retrying = true, parked = true}

-- A job's idempotency claim is set without an expiry (accept, redrive) and starts
-- its dedupe window only here, when the job closes. Counted from acceptance, the
-- window could run out under a job still waiting (a printer paused all
-- afternoon), and the kiosk's retry of that key would then queue a second badge.
-- A claim that names another job (a shed job's key, taken since) is left alone.
local function start_dedupe_window(prefix, job_id)
  local f = redis.call('HMGET', job_key(prefix, job_id), 'idempotency_key', 'dedupe_window_s')
  if not f[1] or not f[2] then return end  -- a job accepted before claims waited for closing
  local claim = claim_key(prefix, f[1])
  local held = redis.call('GET', claim)
  if held and string.sub(held, 1, #job_id + 1) == job_id .. '|' then
    redis.call('EXPIRE', claim, tonumber(f[2]))
  end
end

-- Every change of a job's state goes through here. It also keeps each printer's
-- set of leased (not yet granted) jobs, which routing counts as that printer's
-- load: a prefetched job has left the queue but not joined the printing set.
-- A caller that changes a job's printer_id while it is leased takes it out of the
-- old printer's set first (move_job). It also keeps the expiring index and appends
-- the job's event to the venue's stream.
local function transition(prefix, job_id, from_state, to_state, actor, reason, now)
  if (from_state == 'leased') ~= (to_state == 'leased') then
    local printer_id = redis.call('HGET', job_key(prefix, job_id), 'printer_id')
    if printer_id then
      if to_state == 'leased' then
        redis.call('SADD', leased_key(prefix, printer_id), job_id)
      else
        redis.call('SREM', leased_key(prefix, printer_id), job_id)
      end
    end
  end
  redis.call('HSET', job_key(prefix, job_id), 'state', to_state, 'updated_ms', now)
  local entry = {at = now / 1000, to = to_state, actor = actor, reason = reason}
  if from_state then entry['from'] = from_state else entry['from'] = cjson.null end
  redis.call('RPUSH', job_key(prefix, job_id) .. ':history', cjson.encode(entry))
  -- The retention index (VenueKeys.closed): a closed job leaves Redis
  -- job_retention_s after its last change (retire_claim-1.lua, retire-4.lua).
  if CLOSED_STATES[to_state] then
    redis.call('ZADD', prefix .. 'closed', now, job_id)
    start_dedupe_window(prefix, job_id)
  elseif from_state and CLOSED_STATES[from_state] then
    redis.call('ZREM', prefix .. 'closed', job_id)
  end
  if from_state and CLOSED_STATES[from_state] then
    -- Only a closed job can be claimed for retirement, and the export read it as
    -- it was: the claim is void, and the job stays for a later sweep.
    redis.call('HDEL', job_key(prefix, job_id), 'retire_claim')
  end
  local f = redis.call('HMGET', job_key(prefix, job_id), 'printer_id', 'attempts', 'fence',
    'possible_duplicate', 'created_ms', 'failure_reason', 'kiosk', 'kiosk_group', 'source',
    'idempotency_key', 'expires_ms')
  if f[11] then
    if WAITING_STATES[to_state] then
      redis.call('ZADD', prefix .. 'expiring', tonumber(f[11]), job_id)
    else
      -- Printing, held or closed: the scripts that put it back in a waiting
      -- state come through here again and re-arm it.
      redis.call('ZREM', prefix .. 'expiring', job_id)
    end
  end
  -- The venue's job events (VenueKeys.events): one entry per change, written in
  -- the step that makes the change, so every reader of the stream (each replica's
  -- GET /v1/events, the webhooks) sees each change once and in order. Every entry
  -- has the same fields, which a stream stores once per block of entries.
  local kiosk = f[7]
  if not kiosk then  -- accepted before submitters were recorded: `source` names the kiosk
    local source = f[9] or ''
    kiosk = string.sub(source, 1, 6) == 'kiosk:' and string.sub(source, 7) or ''
  end
  redis.call('XADD', prefix .. 'events', '*', 'job_id', job_id, 'state', to_state,
    'previous_state', from_state or '', 'at_ms', now, 'printer_id', f[1] or '',
    'attempts', f[2] or '0', 'fence', f[3] or '0', 'possible_duplicate', f[4] or '0',
    'created_ms', f[5] or now, 'reason', reason or '', 'failure_reason', f[6] or '',
    'kiosk', kiosk, 'kiosk_group', f[8] or '', 'idempotency_key', f[10] or '',
    'expires_ms', f[11] or '')
end

-- Only a queue that was empty can have a long-poll parked on it: the lease script
-- comes back empty-handed only when the queue is empty or the printer is dead or
-- paused (recovery, resume and pause publish for themselves; a poll on a paused
-- printer wakes itself at the pause's end, see lease-3.lua). At peak every queue has
-- a backlog, and a PUBLISH per job would wake every replica's subscriber for nothing.
local function enqueue(prefix, job_id, printer_id, score, wake_channel)
  local queue = queue_key(prefix, printer_id)
  redis.call('ZADD', queue, score, job_id)
  if redis.call('ZCARD', queue) == 1 then
    redis.call('PUBLISH', wake_channel, printer_id)
  end
end

local function printer_key(prefix, printer_id)
  return prefix .. 'printer:' .. printer_id
end

local function printing_key(prefix, printer_id)
  return prefix .. 'printing:' .. printer_id
end

-- A printer an operator set to reject new jobs (`badgeline reject`): it prints its
-- queue and takes nothing more, whether routed, spilled, moved or failed over to it.
local function rejecting(prefix, printer_id)
  return redis.call('HGET', printer_key(prefix, printer_id), 'rejecting') == '1'
end

-- The printer for a job whose target is a pool or `auto`: the least loaded of the
-- healthy candidates with a fresh heartbeat, not paused, not rejecting, carrying
-- `label` ('' for any). Load is every job the printer holds: waiting in its queue, leased (fetched
-- ahead by its agent, not started) and printing. Counting the leased ones keeps a
-- burst even: an agent that has just prefetched is no emptier than the others. Ties go round the
-- candidates by `turn` (the acceptance sequence): with every queue empty, as
-- when agents lease as fast as jobs come, a fixed order would favour one printer.
-- Degraded printers keep their queue but take no new routed work.
local function route_target(prefix, candidates, label, stale_ms, now, turn)
  local count = #candidates
  if count == 0 then return false end
  table.sort(candidates)
  local best, best_load = false, nil
  for i = 0, count - 1 do
    local printer_id = candidates[((turn + i) % count) + 1]
    local f = redis.call('HMGET', printer_key(prefix, printer_id), 'state', 'last_heartbeat_ms',
      'paused_until_ms', 'labels', 'rejecting')
    local fit = f[1] == 'healthy' and f[2]
      and now - tonumber(f[2]) <= stale_ms and tonumber(f[3] or '0') <= now and f[5] ~= '1'
    if fit and label ~= '' then
      fit = false
      for _, carried in ipairs(cjson.decode(f[4] or '[]')) do
        if carried == label then fit = true end
      end
    end
    if fit then
      local load = redis.call('ZCARD', queue_key(prefix, printer_id))
        + redis.call('SCARD', leased_key(prefix, printer_id))
        + redis.call('SCARD', printing_key(prefix, printer_id))
      if best_load == nil or load < best_load then
        best, best_load = printer_id, load
      end
    end
  end
  return best
end

-- The least-loaded candidate that is healthy, not paused, not rejecting and below
-- the high-water mark right now, for failover. Candidates come from the caller (pool
-- membership is config), but health and depth are re-read here, inside the atomic script.
local function pick_target(prefix, candidates, high_water, now, exclude)
  local best, best_depth = nil, nil
  for _, printer_id in ipairs(candidates) do
    if printer_id ~= exclude then
      local p = redis.call('HMGET', printer_key(prefix, printer_id), 'state', 'paused_until_ms',
        'rejecting')
      local paused = tonumber(p[2] or '0') > now
      if p[1] == 'healthy' and not paused and p[3] ~= '1' then
        local depth = redis.call('ZCARD', queue_key(prefix, printer_id))
        if depth < high_water and (best_depth == nil or depth < best_depth) then
          best, best_depth = printer_id, depth
        end
      end
    end
  end
  return best
end

-- The printers a job of `printer_id` may be dispatched to, from a map built by
-- FailoverController.candidates_by_printer: its pool's printers, else '*' (every one).
local function pool_candidates(by_printer, printer_id)
  return by_printer[printer_id or ''] or by_printer['*']
end

-- Put an existing job on another printer's queue, keeping its id, key and score
-- (so it keeps its place in priority-then-arrival order).
local function move_job(prefix, job_id, from_state, target, actor, reason, now, wake_channel)
  local key = job_key(prefix, job_id)
  local f = redis.call('HMGET', key, 'score', 'printer_id')
  -- Leave the old printer (its leased set) before taking the new printer id, and take
  -- it before the transition, whose event names the printer the job is queued on.
  if from_state == 'leased' and f[2] then
    redis.call('SREM', leased_key(prefix, f[2]), job_id)
  end
  redis.call('HSET', key, 'printer_id', target, 'lease_id', '')
  transition(prefix, job_id, from_state, 'queued', actor, reason, now)
  enqueue(prefix, job_id, target, tonumber(f[1]), wake_channel)
end

local function park_job(prefix, job_id, from_state, actor, reason, now)
  local score = tonumber(redis.call('HGET', job_key(prefix, job_id), 'score'))
  redis.call('ZADD', prefix .. 'parked', score, job_id)
  redis.call('HSET', job_key(prefix, job_id), 'lease_id', '')
  transition(prefix, job_id, from_state, 'parked', actor, reason, now)
end

-- Whether the job's deadline (expire_after_s) has passed: no printer may start it.
local function past_deadline(prefix, job_id, now)
  local expires = tonumber(redis.call('HGET', job_key(prefix, job_id), 'expires_ms') or '')
  return expires ~= nil and expires <= now
end

-- A waiting job whose deadline passed: out of the place it waits in, then `expired`
-- (closed: it never prints). Callers count it into the reports (tally) after.
local function expire_job(prefix, job_id, from_state, actor, now)
  local key = job_key(prefix, job_id)
  if from_state == 'queued' then
    redis.call('ZREM', queue_key(prefix, redis.call('HGET', key, 'printer_id') or ''), job_id)
  elseif from_state == 'leased' then
    redis.call('ZREM', prefix .. 'leases', job_id)
  elseif from_state == 'retrying' then
    redis.call('ZREM', prefix .. 'retry', job_id)
  elseif from_state == 'parked' then
    redis.call('ZREM', prefix .. 'parked', job_id)
  end
  redis.call('HSET', key, 'lease_id', '')
  local payload = job_payload(key)
  transition(prefix, job_id, from_state, 'expired', actor,
    'not started within expire_after_s (' .. tostring(payload.expire_after_s) .. ' s)', now)
end
