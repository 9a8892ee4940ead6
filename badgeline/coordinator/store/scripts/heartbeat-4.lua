-- Record a printer agent's heartbeat and update the printer's health verdict.
--
-- KEYS[1] printer hash  KEYS[2] printers set  KEYS[3] printer's last paper level
-- KEYS[4] alert events list
-- ARGV[1] printer_id  ARGV[2] agent_id  ARGV[3] version  ARGV[4] health JSON
-- ARGV[5] journal JSON  ARGV[6] labels JSON
-- ARGV[7] probe verdict: ok | low | failed | fatal
--   (fatal = jammed, cover open or out of paper: dead at once;
--    failed = printer unreachable: one failure; low = paper low: degraded)
-- ARGV[8] consecutive failures that make a printer dead
-- ARGV[9] consecutive good heartbeats that bring a dead printer back
-- ARGV[10] paper level reported (ok | low | out)  ARGV[11] alert events kept
-- ARGV[12] how the agent confirms prints (process_id | host_status | print_completed |
--   status | sent; '' not known yet)
-- ARGV[13] the language the printer speaks (escpos | zpl | brother_ql)
-- A change of paper level pushes one alert event, whichever replica sees it.
-- Returns {now_ms, paused_until_ms, new_state, old_state, previous paper level}
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'state', 'consecutive_failures', 'consecutive_healthy')
local old_state = f[1] or 'new'
local failures = tonumber(f[2] or '0')
local healthy_run = tonumber(f[3] or '0')
local verdict, threshold, recover_after = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])

local new_state
if verdict == 'fatal' then
  failures, healthy_run, new_state = threshold, 0, 'dead'
elseif verdict == 'failed' then
  failures, healthy_run = failures + 1, 0
  if failures >= threshold or old_state == 'dead' then new_state = 'dead' else new_state = 'degraded' end
else
  failures = 0
  local good_state = 'healthy'
  if verdict == 'low' then good_state = 'degraded' end
  if old_state == 'dead' then
    healthy_run = healthy_run + 1
    if healthy_run >= recover_after then new_state = good_state else new_state = 'dead' end
  else
    healthy_run, new_state = 0, good_state
  end
end

redis.call('HSET', KEYS[1], 'printer_id', ARGV[1], 'agent_id', ARGV[2], 'version', ARGV[3],
  'health', ARGV[4], 'journal', ARGV[5], 'labels', ARGV[6], 'last_heartbeat_ms', now,
  'consecutive_failures', failures, 'consecutive_healthy', healthy_run, 'state', new_state,
  'confirmation', ARGV[12], 'language', ARGV[13])
if new_state ~= old_state then
  redis.call('HSET', KEYS[1], 'state_changed_ms', now)
  if new_state == 'dead' then
    redis.call('HINCRBY', KEYS[1], 'dead_epoch', 1)
  end
end
redis.call('SADD', KEYS[2], ARGV[1])

local paper_before = redis.call('GET', KEYS[3]) or 'ok'
if paper_before ~= ARGV[10] then
  redis.call('SET', KEYS[3], ARGV[10])
  redis.call('LPUSH', KEYS[4], cjson.encode({at = now / 1000, kind = 'paper_' .. ARGV[10],
    printer_id = ARGV[1], previous = paper_before}))
  redis.call('LTRIM', KEYS[4], 0, tonumber(ARGV[11]) - 1)
end
return {now, tonumber(redis.call('HGET', KEYS[1], 'paused_until_ms') or '0'), new_state, old_state,
  paper_before}
