-- Choose the printer for a job whose target is a pool or `auto`: the least
-- loaded healthy candidate, in one call whatever the fleet size (reading each
-- printer from Python cost two round trips per printer per submit).
--
-- KEYS[1] printers set
-- ARGV[1] prefix  ARGV[2] candidates: a JSON list (a configured pool), or '*'
--   for every printer of the venue  ARGV[3] label the candidates must carry
--   ('' for none: a configured pool, or `default`/`auto`)
-- ARGV[4] heartbeat age (ms) past which a printer takes no new routed work
-- Returns the chosen printer id, or false when no candidate is fit.
local prefix, label, stale_ms = ARGV[1], ARGV[3], tonumber(ARGV[4])
local candidates
if ARGV[2] == '*' then
  candidates = redis.call('SMEMBERS', KEYS[1])
  table.sort(candidates)
else
  candidates = cjson.decode(ARGV[2])
end
local now = now_ms()
local best, best_depth = false, nil
for _, printer_id in ipairs(candidates) do
  local f = redis.call('HMGET', printer_key(prefix, printer_id), 'state', 'last_heartbeat_ms',
    'paused_until_ms', 'labels')
  local fit = f[1] == 'healthy' and f[2]
    and now - tonumber(f[2]) <= stale_ms and tonumber(f[3] or '0') <= now
  if fit and label ~= '' then
    fit = false
    for _, carried in ipairs(cjson.decode(f[4] or '[]')) do
      if carried == label then fit = true end
    end
  end
  if fit then
    -- Degraded printers keep their queue but take no new routed work.
    local depth = redis.call('ZCARD', queue_key(prefix, printer_id))
    if best_depth == nil or depth < best_depth then
      best, best_depth = printer_id, depth
    end
  end
end
return best
