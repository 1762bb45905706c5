-- log: locks' histories, newest first (see record() in lib.lua).
-- KEYS: the history streams (not a lock's keys).  ARGV (A): count,
-- since_ms (0: all), see src/lua/contract.  Returns
-- {now_ms, {entries of the first key, ...}}, each {{id, {field, value,
-- ...}}, ...}, or false for a key another Cluster node serves (see
-- quorum_cluster_run in quorum.c), or an error reply for a key that is
-- not a stream.  Reads only: a replica can answer.
-- With since_ms, a stream that has fewer than count entries since then
-- also gives the newest entry before them (older than now_ms - since_ms,
-- which the client leaves out): the event that the oldest one follows,
-- from which the client tells a lock that expired (see history.c).
local now = clock()
local since = tonumber(A.since_ms)
local count = tonumber(A.count)
local oldest = since > 0 and tostring(now - since) or '-'
local out = {}
for i = 1, #KEYS do
	local r = redis.pcall('XREVRANGE', KEYS[i], '+', oldest, 'COUNT',
		count)
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
		if since > 0 and #r < count and now - since > 0 then
			local before = redis.pcall('XREVRANGE', KEYS[i],
				tostring(now - since - 1), '-', 'COUNT', 1)
			if type(before) == 'table' and before[1] then
				r[#r + 1] = before[1]
			end
		end
		out[i] = r
	end
end
return {now, out}
