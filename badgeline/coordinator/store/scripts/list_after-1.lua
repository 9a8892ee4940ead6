-- A page of a list kept newest first (LPUSH, trimmed at its tail: failover decisions,
-- alert events): the entries after the one a previous page ended with, found and read
-- in one atomic step, so that an entry pushed meanwhile cannot shift the page.
--
-- KEYS[1] the list
-- ARGV[1] how ARGV[2] names an entry: 'member' (the entry itself, e.g. a decision id)
--         or 'sha1' (the first 16 hex digits of the entry's SHA-1, e.g. a JSON event)
-- ARGV[2] the entry the previous page ended with; '' for the first page
-- ARGV[3] how many entries to return
-- Returns the entries after it, oldest-ward, at most ARGV[3]; {} when that entry has
-- left the list (trimmed: every older entry has left with it).
local count = tonumber(ARGV[3])
if ARGV[2] == '' then
  return redis.call('LRANGE', KEYS[1], 0, count - 1)
end
local index = nil
if ARGV[1] == 'member' then
  index = redis.call('LPOS', KEYS[1], ARGV[2])
else
  local entries = redis.call('LRANGE', KEYS[1], 0, -1)
  for i, entry in ipairs(entries) do
    if string.sub(redis.sha1hex(entry), 1, 16) == ARGV[2] then
      index = i - 1
      break
    end
  end
end
if not index then
  return {}
end
return redis.call('LRANGE', KEYS[1], index + 1, index + count)
