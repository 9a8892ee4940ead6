-- Remove from Redis the jobs retire_claim-1.lua handed to this claimant, once it
-- has written them to the audit export: counted into the reports first, then out
-- of every index (closed, dead letters, acknowledgement checks, the attendee's
-- set, the flagged and printed-twice sets) and their keys deleted.
--
-- KEYS[1] closed zset  KEYS[2] totals hash  KEYS[3] printed-twice set
-- KEYS[4] possible-duplicates set
-- ARGV[1] prefix  ARGV[2] the claim token  ARGV[3..] job ids
-- Returns {retired, kept}. A job is kept when its claim is no longer this token's
-- (it changed after the claim, or the claim ran out and another claimant took it)
-- or a redrive it would stop is pending: a later sweep exports it again.
--
-- The totals keep what the reports read from jobs that are gone (KEYS[2]):
-- retired, retired_failed (accepted jobs that left failed or dead-lettered:
-- reconciliation counts them as failed), retired_printed_twice and
-- retired_possible_duplicates. An idempotency claim still in its dedupe window
-- keeps its expiry and carries what a duplicate's answer needs (accept-7.lua).
local prefix, token = ARGV[1], ARGV[2]
local retired, kept = 0, 0
for i = 3, #ARGV do
  local job_id = ARGV[i]
  local key = job_key(prefix, job_id)
  local f = redis.call('HMGET', key, 'state', 'retire_claim')
  if f[2] ~= token or not CLOSED_STATES[f[1] or ''] or redrive_blocker(prefix, job_id) then
    kept = kept + 1
  else
    tally(prefix, job_id)  -- a no-op unless a finish was never counted
    local g = redis.call('HMGET', key, 'state', 'tally_accepted', 'idempotency_key',
      'payload_hash', 'printer_id', 'kiosk', 'kiosk_group', 'source')
    redis.call('HINCRBY', KEYS[2], 'retired', 1)
    if g[2] == '1' and (g[1] == 'failed' or g[1] == 'dead_lettered') then
      redis.call('HINCRBY', KEYS[2], 'retired_failed', 1)
    end
    if redis.call('SREM', KEYS[3], job_id) == 1 then
      redis.call('HINCRBY', KEYS[2], 'retired_printed_twice', 1)
    end
    if redis.call('SREM', KEYS[4], job_id) == 1 then
      redis.call('HINCRBY', KEYS[2], 'retired_possible_duplicates', 1)
    end
    redis.call('ZREM', KEYS[1], job_id)
    redis.call('ZREM', prefix .. 'dlq', job_id)
    redis.call('ZREM', prefix .. 'inflight_checks', job_id)
    redis.call('SREM', prefix .. 'attendee:' .. (job_payload(key).attendee_id or ''), job_id)
    if g[3] then
      local claim = claim_key(prefix, g[3])
      local held = redis.call('GET', claim)
      if held and string.sub(held, 1, #job_id + 1) == job_id .. '|' then
        local kept_fields = cjson.encode({state = g[1], printer_id = g[5], kiosk = g[6],
          kiosk_group = g[7], source = g[8]})
        redis.call('SET', claim, job_id .. '|' .. (g[4] or '') .. '|' .. kept_fields, 'KEEPTTL')
      end
    end
    redis.call('DEL', key, key .. ':history', key .. ':prints', key .. ':grants',
      key .. ':reprint_seq')
    retired = retired + 1
  end
end
return {retired, kept}
