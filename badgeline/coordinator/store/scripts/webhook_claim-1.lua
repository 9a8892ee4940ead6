-- Claim the webhook deliveries that are due another attempt (control/webhooks.py):
-- entries of the target's consumer group whose last attempt failed, or whose
-- consumer (a replica) died mid-attempt, once their back-off is over. An entry is
-- idle from its last attempt's start (webhook_hold-1.lua restarts it), so one idle
-- past `attempt_ms` (the delivery timeout and a margin) has no attempt running:
-- claiming it here, atomically, hands it to exactly one replica.
--
-- KEYS[1] the events stream
-- ARGV[1] group  ARGV[2] consumer  ARGV[3] most entries claimed
-- ARGV[4] attempt_ms  ARGV[5] back-off unit ms  ARGV[6] back-off cap ms
-- ARGV[7] most attempts (deliveries) per entry
-- Returns {claimed entries ({id, {field, value, ...}} as XCLAIM answers), ids given up}:
-- an entry out of attempts, or trimmed from the stream meanwhile, is acknowledged
-- (given up) so that it leaves the group's pending list.
local group, consumer, most = ARGV[1], ARGV[2], tonumber(ARGV[3])
local attempt_ms, unit, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local max_attempts = tonumber(ARGV[7])
local claimed, dropped = {}, {}
-- The oldest pending entries first; the scan is bounded so one call stays short.
local pending = redis.call('XPENDING', KEYS[1], group, 'IDLE', attempt_ms, '-', '+', 1000)
for _, p in ipairs(pending) do
  local entry_id, idle, deliveries = p[1], tonumber(p[3]), tonumber(p[4])
  if deliveries >= max_attempts then
    redis.call('XACK', KEYS[1], group, entry_id)
    table.insert(dropped, entry_id)
  elseif #claimed < most then
    -- min(2^(n-1) units, cap) after the attempt's own time
    local wait = attempt_ms + math.min(unit * math.pow(2, deliveries - 1), cap)
    if idle >= wait then
      local got = redis.call('XCLAIM', KEYS[1], group, consumer, wait, entry_id)
      if got[1] and got[1][2] then
        table.insert(claimed, got[1])
      else
        redis.call('XACK', KEYS[1], group, entry_id)
        table.insert(dropped, entry_id)
      end
    end
  end
end
return {claimed, dropped}
