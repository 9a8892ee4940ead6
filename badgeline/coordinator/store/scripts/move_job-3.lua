-- Move one waiting job to another printer or pool, on an operator's word: it keeps
-- its id, idempotency key and score (its place in priority-then-arrival order), and
-- its history gains the move. Only a job that no printer has started can move:
-- queued, leased and not yet started (the lease is revoked: its start is refused),
-- or parked.
--
-- KEYS[1] job hash  KEYS[2] lease expiry zset  KEYS[3] printers set
-- ARGV[1] prefix  ARGV[2] job_id
-- ARGV[3] target printer ('' when the script chooses among candidates)
-- ARGV[4] candidates of a pool or `auto` target: a JSON list, '*' for every printer
--   of the venue (KEYS[3]); '' for a named target
-- ARGV[5] label the candidates must carry ('' for none)
-- ARGV[6] heartbeat age (ms) past which a printer takes no routed work
-- ARGV[7] high water  ARGV[8] actor  ARGV[9] wake channel
-- ARGV[10] '1' when a named target must have reported (the config names it nowhere)
-- Returns {code, detail, source printer}:
--   1 moved (detail = target), 0 already on that printer (nothing written),
--   -1 not movable (detail = its state), -2 no such job, -3 no fit printer in the
--   pool, -4 unknown target, -5 target rejects new jobs, -6 target dead,
--   -7 target at its high-water mark (detail = its depth).
local prefix, job_id = ARGV[1], ARGV[2]
local f = redis.call('HMGET', KEYS[1], 'state', 'printer_id', 'seq')
local state, source = f[1], f[2] or ''
if not state then
  return {-2, 'not_found', ''}
end
if state ~= 'queued' and state ~= 'leased' and state ~= 'parked' then
  return {-1, state, source}
end
local now = now_ms()
local target = ARGV[3]
if ARGV[4] ~= '' then
  local listed
  if ARGV[4] == '*' then listed = redis.call('SMEMBERS', KEYS[3]) else listed = cjson.decode(ARGV[4]) end
  -- A parked job's printer is the dead one it left: any fit candidate will do.
  local candidates = {}
  for _, printer_id in ipairs(listed) do
    if printer_id ~= source or state == 'parked' then table.insert(candidates, printer_id) end
  end
  target = route_target(prefix, candidates, ARGV[5], tonumber(ARGV[6]), now,
    tonumber(f[3] or '0'))
  if not target then
    return {-3, '', source}
  end
else
  if target == source and state ~= 'parked' then
    return {0, target, source}
  end
  local p = redis.call('HMGET', printer_key(prefix, target), 'state', 'last_heartbeat_ms')
  if ARGV[10] == '1' and not p[2] then
    return {-4, target, source}
  end
  if rejecting(prefix, target) then
    return {-5, target, source}
  end
  if p[1] == 'dead' then
    return {-6, target, source}
  end
end
local depth = redis.call('ZCARD', queue_key(prefix, target))
if depth >= tonumber(ARGV[7]) then
  return {-7, tostring(depth), source}
end
if state == 'queued' then
  redis.call('ZREM', queue_key(prefix, source), job_id)
elseif state == 'leased' then
  redis.call('ZREM', KEYS[2], job_id)
else
  redis.call('ZREM', prefix .. 'parked', job_id)
end
redis.call('SADD', KEYS[3], target)
move_job(prefix, job_id, state, target, ARGV[8],
  'moved by ' .. ARGV[8] .. ' from ' .. source .. ' to ' .. target, now, ARGV[9])
return {1, target, source}
