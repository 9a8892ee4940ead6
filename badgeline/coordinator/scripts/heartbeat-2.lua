-- Record a printer agent's heartbeat, stamped with the Redis clock.
--
-- KEYS[1] printer hash  KEYS[2] printers set
-- ARGV[1] printer_id  ARGV[2] agent_id  ARGV[3] version  ARGV[4] health JSON
-- ARGV[5] journal JSON  ARGV[6] labels JSON
-- Returns {now_ms, paused_until_ms}
local now = now_ms()
redis.call('HSET', KEYS[1], 'printer_id', ARGV[1], 'agent_id', ARGV[2], 'version', ARGV[3],
  'health', ARGV[4], 'journal', ARGV[5], 'labels', ARGV[6], 'last_heartbeat_ms', now)
redis.call('SADD', KEYS[2], ARGV[1])
return {now, tonumber(redis.call('HGET', KEYS[1], 'paused_until_ms') or '0')}
