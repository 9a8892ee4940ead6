-- Bring one job hash to the current data format (the coordinator's start-up
-- upgrade, store/upgrade.py): format 1 kept the payload in separate fields;
-- format 2 keeps it as one JSON field, `payload` (PrintJob in protocol/models.py);
-- format 3 also indexes every closed job by when it closed, for retention.
--
-- KEYS[1] job hash  KEYS[2] closed zset (job_id -> when it closed, ms)
-- Returns 1 when the job was upgraded, 0 when there was nothing to do (already
-- upgraded, by this replica or another, or no such job).
local changed = 0
local f = redis.call('HMGET', KEYS[1], 'attendee_id', 'badge_pdf_ref', 'printer_target',
  'priority', 'idempotency_key', 'state', 'job_id', 'updated_ms', 'created_ms')
if not f[6] then
  return 0
end
if redis.call('HEXISTS', KEYS[1], 'payload') == 0 and f[5] then
  redis.call('HSET', KEYS[1], 'payload', cjson.encode({attendee_id = f[1], badge_pdf_ref = f[2],
    printer_target = f[3], priority = tonumber(f[4]), idempotency_key = f[5]}))
  redis.call('HDEL', KEYS[1], 'attendee_id', 'badge_pdf_ref', 'printer_target', 'priority')
  changed = 1
end
if CLOSED_STATES[f[6]] and f[7] and not redis.call('ZSCORE', KEYS[2], f[7]) then
  redis.call('ZADD', KEYS[2], tonumber(f[8] or f[9] or '0'), f[7])
  changed = 1
end
return changed
