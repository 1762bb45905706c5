-- inspect: everything status shows about one lock.
-- KEYS: lock, info, fence, waiters, queue.  Returns {held, pttl_ms,
-- last_fence, now_ms, host, pid, user, command, acquired_ms, ttl_ms, fence,
-- token, waiters, holders}, the holder's fields false when free; waiters
-- is a list of
-- {token, host, pid, user, command, waiting_ms, place}, place being the
-- 1-based rank in the --fifo queue (false for a waiter not in it).
-- holders is {} for a plain lock, else {limit, holders} (lib.lua's
-- holders(): limit 0 for a shared lock), and held says whether anyone
-- holds it.  Tokens are only compared across servers (quorum mode), never
-- shown.  Waiters whose next attempt is overdue (dead, or gone) are
-- dropped here.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local held = redis.call('EXISTS', KEYS[1])
local r = {held, redis.call('PTTL', KEYS[1]),
	tonumber(redis.call('GET', KEYS[3])) or 0,
	t[1] * 1000 + math.floor(t[2] / 1000)}
local sem = holders(KEYS[1], r[4], false)
if held == 1 and not sem[1] then
	local h = redis.call('HMGET', KEYS[2], 'host', 'pid', 'user', 'command',
		'acquired_ms', 'ttl_ms', 'fence')
	for i = 1, 7 do r[4 + i] = h[i] end
	r[12] = redis.call('GET', KEYS[1])
else
	for i = 5, 12 do r[i] = false end
end
local w, all = {}, redis.call('HGETALL', KEYS[4])
for i = 1, #all, 2 do
	local ok, e = pcall(cjson.decode, all[i + 1])
	if not ok or type(e) ~= 'table' or (tonumber(e.u) or 0) < r[4] then
		redis.pcall('HDEL', KEYS[4], all[i])	-- a replica cannot: no matter
	else
		local rank = redis.call('ZRANK', KEYS[5], all[i])
		w[#w + 1] = {all[i], e.h, e.p, e.n, e.c,
			r[4] - (tonumber(e.s) or r[4]), rank and rank + 1 or false}
	end
end
r[13] = w
r[14] = sem
if sem[1] then
	r[1] = #sem[2] > 0 and 1 or 0
end
return r
