-- log: a lock's history, newest first (see record() in lib.lua).
-- KEYS: the history stream.  ARGV: count, since_ms (0: all).  Returns
-- {now_ms, {{id, {field, value, ...}}, ...}}.  Reads only: a replica
-- can answer.
local now = clock()
local since = tonumber(ARGV[2])
local oldest = since > 0 and tostring(now - since) or '-'
return {now, redis.call('XREVRANGE', KEYS[1], '+', oldest, 'COUNT',
	tonumber(ARGV[1]))}
