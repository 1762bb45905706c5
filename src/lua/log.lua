-- log: locks' histories, newest first (see record() in lib.lua).
-- KEYS: the history streams.  ARGV: count, since_ms (0: all).  Returns
-- {now_ms, {entries of the first key, ...}}, each {{id, {field, value,
-- ...}}, ...}.  Reads only: a replica can answer.
local now = clock()
local since = tonumber(ARGV[2])
local oldest = since > 0 and tostring(now - since) or '-'
local out = {}
for i = 1, #KEYS do
	out[i] = redis.call('XREVRANGE', KEYS[i], '+', oldest, 'COUNT',
		tonumber(ARGV[1]))
end
return {now, out}
