-- Count missed heartbeats as failed probes, for every printer of the venue.
-- Safe to run from every coordinator replica: each state change happens once.
--
-- KEYS[1] printers set  KEYS[2] inflight check zset  KEYS[3] retry zset  KEYS[4] parked zset
-- ARGV[1] prefix  ARGV[2] heartbeat interval ms  ARGV[3] failures that make a printer dead
-- Returns {changed, awaiting, known, due}: a flat list {printer_id, old_state, new_state, ...}
-- of printers that changed, the dead printers whose death no failover has
-- handled yet (dead_epoch > failed_over_epoch), every printer of the venue, and
-- {inflight checks due, retries due, jobs parked} as 0/1 flags, so that the monitor
-- runs the scripts for those (resolve_inflight, promote_retries, unpark) only on a
-- tick that has work for them: nearly every tick has none.
-- One call per monitor tick reads the whole fleet, so a tick costs the same few
-- round trips for 4 printers or 500.
local prefix, interval, threshold = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- A beat counts as missed a quarter interval after it was due, so a heartbeat
-- that is a few milliseconds late does not flap a printer to degraded.
local slack = interval / 4
local now = now_ms()
local changed = {}
local awaiting = {}
-- Heartbeats can only be missed while some coordinator was up to receive them.
-- If no monitor has run for a while (every coordinator was down), start
-- counting afresh from now instead of declaring the whole fleet dead at once.
local watch = prefix .. 'heartbeat_watch'
local w = redis.call('HMGET', watch, 'last_check_ms', 'resumed_ms')
local resumed = tonumber(w[2] or '0')
if now - tonumber(w[1] or '0') > 2 * interval then
  resumed = now
end
redis.call('HSET', watch, 'last_check_ms', now, 'resumed_ms', resumed)
local known = redis.call('SMEMBERS', KEYS[1])
for _, printer_id in ipairs(known) do
  local key = printer_key(prefix, printer_id)
  local f = redis.call('HMGET', key, 'state', 'last_heartbeat_ms', 'consecutive_failures',
    'dead_epoch', 'failed_over_epoch')
  local dead_epoch = tonumber(f[4] or '0')
  if f[2] and f[1] ~= 'dead' then
    local since = math.max(tonumber(f[2]), resumed)
    local missed = math.floor((now - since - slack) / interval)
    if missed >= 1 then
      local failures = tonumber(f[3] or '0') + missed
      local new_state = 'degraded'
      if failures >= threshold then new_state = 'dead' end
      if new_state ~= f[1] then
        redis.call('HSET', key, 'state', new_state, 'state_changed_ms', now,
          'consecutive_healthy', 0)
        if new_state == 'dead' then
          dead_epoch = redis.call('HINCRBY', key, 'dead_epoch', 1)
        end
        table.insert(changed, printer_id)
        table.insert(changed, f[1] or 'new')
        table.insert(changed, new_state)
        f[1] = new_state
      end
    end
  end
  if f[1] == 'dead' and dead_epoch > tonumber(f[5] or '0') then
    table.insert(awaiting, printer_id)
  end
end
table.sort(awaiting)
local function any_due(zset)
  if #redis.call('ZRANGEBYSCORE', zset, '-inf', now, 'LIMIT', 0, 1) > 0 then return 1 end
  return 0
end
local parked = 0
if redis.call('ZCARD', KEYS[4]) > 0 then parked = 1 end
return {changed, awaiting, known, {any_due(KEYS[2]), any_due(KEYS[3]), parked}}
