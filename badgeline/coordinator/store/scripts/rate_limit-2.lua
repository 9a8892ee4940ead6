-- A request bucket and daily job quota, taken (or given back) atomically: a kiosk
-- token's (ratelimit.py), or a client address's attempts at a secret (attempts.py).
--
-- KEYS[1] bucket hash {tokens, at_ms}
-- KEYS[2] quota hash {day, used}: touched only by a take that counts a quota, and by
--         'refund' (a caller that counts none, attempts.py, passes KEYS[1] again)
-- ARGV[1] 'take' | 'refund' | 'return'
-- take:   ARGV[2] rate per second (0 = no rate limit)  ARGV[3] burst
--         ARGV[4] daily quota (0 = this request does not count against one)
-- refund: ARGV[2] the day a take returned (gives back one job of that day's quota)
-- return: ARGV[2] rate per second  ARGV[3] burst (gives back the one request a take
--         took from the bucket, up to the burst)
-- Returns {admitted 1|0, retry_after_ms, limit ('' | 'rate' | 'quota'), quota used, day}.
-- A refused take writes nothing. The day is the UTC day number of the Redis clock.
local now = now_ms()
local day = math.floor(now / 86400000)

if ARGV[1] == 'return' then
  local rate, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
  local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at_ms')
  if bucket[1] and rate > 0 then
    local refill = math.max(0, now - tonumber(bucket[2])) * rate / 1000
    local tokens = math.min(burst, tonumber(bucket[1]) + refill + 1)
    redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at_ms', now)
  end
  return {1, 0, '', 0, day}
end

if ARGV[1] == 'refund' then
  local quota = redis.call('HMGET', KEYS[2], 'day', 'used')
  if quota[1] == ARGV[2] and tonumber(quota[2] or '0') > 0 then
    redis.call('HINCRBY', KEYS[2], 'used', -1)
  end
  return {1, 0, '', 0, day}
end

local rate, burst, quota = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local tokens = burst
if rate > 0 then
  local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at_ms')
  if bucket[1] then
    local refill = math.max(0, now - tonumber(bucket[2])) * rate / 1000
    tokens = math.min(burst, tonumber(bucket[1]) + refill)
  end
  if tokens < 1 then
    return {0, math.ceil((1 - tokens) * 1000 / rate), 'rate', 0, day}
  end
end

local used = 0
if quota > 0 then
  local state = redis.call('HMGET', KEYS[2], 'day', 'used')
  if state[1] == tostring(day) then
    used = tonumber(state[2] or '0')
  end
  if used >= quota then
    return {0, (day + 1) * 86400000 - now, 'quota', used, day}
  end
end

if rate > 0 then
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'at_ms', now)
  -- An idle bucket is full again after burst / rate seconds: it need not outlive that.
  redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
end
if quota > 0 then
  used = used + 1
  redis.call('HSET', KEYS[2], 'day', day, 'used', used)
  redis.call('PEXPIRE', KEYS[2], 2 * 86400000)
end
return {1, 0, '', used, day}
