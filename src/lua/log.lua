-- log: locks' histories, newest first (see record() in lib.lua).
-- KEYS: the history streams.  ARGV: count, since_ms (0: all).  Returns
-- {now_ms, {entries of the first key, ...}}, each {{id, {field, value,
-- ...}}, ...}, or false for a key another Cluster node serves (see
-- quorum_cluster_script in quorum.c), or an error reply for a key that is
-- not a stream.  Reads only: a replica can answer.
local now = clock()
local since = tonumber(ARGV[2])
local oldest = since > 0 and tostring(now - since) or '-'
local out = {}
for i = 1, #KEYS do
	local r = redis.pcall('XREVRANGE', KEYS[i], '+', oldest, 'COUNT',
		tonumber(ARGV[1]))
	if type(r) == 'table' and r.err then
		if string.find(r.err, 'non local key', 1, true) then
			out[i] = false
		else
			-- Another program's key: an error in its place, the
			-- other histories still shown.
			out[i] = {err = 'RLOCK_DAMAGED ' .. KEYS[i] .. ' holds a ' ..
				type_of(KEYS[i]) .. ', not a stream'}
		end
	else
		out[i] = r
	end
end
return {now, out}
