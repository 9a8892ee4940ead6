-- Just before a webhook delivery attempt: restart the entry's idle time if it is
-- still this consumer's, so that no other replica claims it while the attempt runs
-- (webhook_claim-1.lua waits for an idle time past an attempt's). An entry another
-- replica claimed meanwhile (this one waited too long) is left to that one.
--
-- KEYS[1] the events stream
-- ARGV[1] group  ARGV[2] consumer  ARGV[3] entry id
-- Returns 1 held (attempt it), 0 not this consumer's (or no longer pending: skip it).
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #p == 0 or p[1][2] ~= ARGV[2] then
  return 0
end
-- JUSTID: the delivery count stays the number of attempts begun.
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
return 1
