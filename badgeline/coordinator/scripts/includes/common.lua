-- Shared helpers, prepended to every script by badgeline.coordinator.scripts.
-- Time always comes from the Redis server: coordinator replicas' clocks differ.

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function job_key(prefix, job_id)
  return prefix .. 'job:' .. job_id
end

local function queue_key(prefix, printer_id)
  return prefix .. 'queue:' .. printer_id
end

-- Every state change goes through here so that no change escapes the trail.
local function transition(prefix, job_id, from_state, to_state, actor, reason, now)
  redis.call('HSET', job_key(prefix, job_id), 'state', to_state, 'updated_ms', now)
  local entry = {at = now / 1000, to = to_state, actor = actor, reason = reason}
  if from_state then entry['from'] = from_state else entry['from'] = cjson.null end
  redis.call('RPUSH', job_key(prefix, job_id) .. ':history', cjson.encode(entry))
end

local function enqueue(prefix, job_id, printer_id, score, wake_channel)
  redis.call('ZADD', queue_key(prefix, printer_id), score, job_id)
  redis.call('PUBLISH', wake_channel, printer_id)
end
