-- inspect: everything status shows about one lock.
-- KEYS: lock, info, fence.  Returns {held, pttl_ms, last_fence, now_ms,
-- host, pid, user, command, acquired_ms, ttl_ms, fence, token}.  The token
-- is only compared across servers (quorum mode), never shown.
local t = redis.call('TIME')
local held = redis.call('EXISTS', KEYS[1])
local r = {held, redis.call('PTTL', KEYS[1]),
	tonumber(redis.call('GET', KEYS[3])) or 0,
	t[1] * 1000 + math.floor(t[2] / 1000)}
if held == 1 then
	local h = redis.call('HMGET', KEYS[2], 'host', 'pid', 'user', 'command',
		'acquired_ms', 'ttl_ms', 'fence')
	for i = 1, 7 do r[4 + i] = h[i] end
	r[12] = redis.call('GET', KEYS[1])
end
return r
