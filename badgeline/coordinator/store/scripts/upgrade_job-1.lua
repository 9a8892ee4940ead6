-- Bring one job hash to the current data format (the coordinator's start-up
-- upgrade, store/upgrade.py): format 1 kept the payload in separate fields;
-- format 2 keeps it as one JSON field, `payload` (PrintJob in protocol/models.py).
--
-- KEYS[1] job hash
-- Returns 1 when the job was upgraded, 0 when there was nothing to do (already
-- upgraded, by this replica or another, or no such job).
if redis.call('HEXISTS', KEYS[1], 'payload') == 1 then
  return 0
end
local f = redis.call('HMGET', KEYS[1], 'attendee_id', 'badge_pdf_ref', 'printer_target',
  'priority', 'idempotency_key')
if not f[5] then
  return 0
end
redis.call('HSET', KEYS[1], 'payload', cjson.encode({attendee_id = f[1], badge_pdf_ref = f[2],
  printer_target = f[3], priority = tonumber(f[4]), idempotency_key = f[5]}))
redis.call('HDEL', KEYS[1], 'attendee_id', 'badge_pdf_ref', 'printer_target', 'priority')
return 1
