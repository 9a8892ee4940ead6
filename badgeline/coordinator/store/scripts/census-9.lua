-- One atomic read of every job that is not finished, for reconciliation and
-- the jobs-by-state gauges: the members of every index a live job sits in
-- (printer queues, leases, printing sets, retry, parked, dead letters, held),
-- the flagged and the printed-twice jobs, and the tally totals, all at one
-- instant so that the counts add up. Cost is O(live jobs), never O(venue).
--
-- KEYS[1] printers set  KEYS[2] lease expiry zset  KEYS[3] retry zset
-- KEYS[4] parked zset  KEYS[5] dead-letter zset  KEYS[6] held zset
-- KEYS[7] totals hash  KEYS[8] possible-duplicates set  KEYS[9] printed-twice set
-- ARGV[1] prefix  ARGV[2] more candidate job ids (JSON list, e.g. jobs a failover held)
-- ARGV[3] most jobs returned
-- Returns JSON {now_ms, truncated, totals: {...}, jobs: [[job_id, state, created_ms,
--   updated_ms, printer_id, attendee_id, possible_duplicate, prints, printed_by,
--   counted as accepted by the tally], ...]}
local prefix, limit = ARGV[1], tonumber(ARGV[3])
local seen, ids = {}, {}
local truncated = false

local function add_all(members)
  for _, job_id in ipairs(members) do
    if not seen[job_id] then
      if #ids >= limit then
        truncated = true
        return
      end
      seen[job_id] = true
      table.insert(ids, job_id)
    end
  end
end

for _, printer_id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  add_all(redis.call('ZRANGE', queue_key(prefix, printer_id), 0, -1))
  add_all(redis.call('SMEMBERS', printing_key(prefix, printer_id)))
end
for i = 2, 6 do
  add_all(redis.call('ZRANGE', KEYS[i], 0, -1))
end
add_all(cjson.decode(ARGV[2]))
add_all(redis.call('SMEMBERS', KEYS[8]))
add_all(redis.call('SMEMBERS', KEYS[9]))

local jobs = {}
for _, job_id in ipairs(ids) do
  local key = job_key(prefix, job_id)
  local f = redis.call('HMGET', key, 'state', 'created_ms', 'updated_ms', 'printer_id',
    'payload', 'possible_duplicate', 'printed_by', 'tally_accepted')
  if f[1] then
    local attendee_id = cjson.decode(f[5] or '{}').attendee_id or ''
    table.insert(jobs, {job_id, f[1], tonumber(f[2]), tonumber(f[3] or f[2]), f[4] or '',
      attendee_id, f[6] == '1', redis.call('SCARD', key .. ':prints'), f[7] or '', f[8] == '1'})
  end
end

local totals = {}
local flat = redis.call('HGETALL', KEYS[7])
for i = 1, #flat, 2 do
  totals[flat[i]] = tonumber(flat[i + 1])
end
return cjson.encode({
  now_ms = now_ms(), truncated = truncated, totals = totals, jobs = jobs,
})
