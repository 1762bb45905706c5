-- inspect: everything status shows about some locks, in one call.
-- KEYS: for each lock, its lock, info, fence, waiters, queue and every keys
-- (six a lock).  Returns a list with, for each lock, {held, pttl_ms,
-- last_fence, now_ms, host, pid, user, command, acquired_ms, ttl_ms, fence,
-- token, waiters, holders, schedule}, the holder's fields false when free;
-- schedule is {} for a name never run with --every, else {period_ms,
-- last_start_ms, host, pid, outcome} (see lib.lua); waiters
-- is a list of
-- {token, host, pid, user, command, waiting_ms, place}, place being the
-- 1-based rank in the --fifo queue (false for a waiter not in it).
-- holders is {} for a plain lock, else {limit, holders} (lib.lua's
-- holder_list(): limit 0 for a shared lock), and held says whether anyone
-- holds it.  Tokens are only compared across servers (quorum mode), never
-- shown.  Waiters whose next attempt is overdue (dead, or gone) are
-- dropped here.  A lock whose keys are damaged (see lib.lua) is an error
-- reply in its place, saying what is wrong.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)

local function inspect(lock, info, fence, waiters, queue, every)
	local H = hold_read(lock, now)
	local held = #H.live > 0 and 1 or 0
	local r = {held, held == 1 and H.latest - now or -2,
		tonumber(redis.call('GET', fence)) or 0, now}
	local sem = holder_list(H, now)
	local x = H.kind == 'x' and H.live[1]
	if x then
		local h = {x.h, x.p, x.n, x.c, x.t, x.l, fence_text(x.f)}
		for i = 1, 7 do r[4 + i] = h[i] or false end
		r[12] = x.token
	else
		for i = 5, 12 do r[i] = false end
	end
	local w, all = {}, redis.call('HGETALL', waiters)
	for i = 1, #all, 2 do
		local ok, e = pcall(cjson.decode, all[i + 1])
		if not ok or type(e) ~= 'table' or (tonumber(e.u) or 0) < now then
			redis.pcall('HDEL', waiters, all[i])	-- a replica cannot: no matter
		elseif hold_find(H, all[i]) then
			-- A quorum's winner keeps its entry where it won (see
			-- acquire.lua): it holds, it does not wait.
		else
			local rank = redis.call('ZRANK', queue, all[i])
			w[#w + 1] = {all[i], e.h, e.p, e.n, e.c,
				now - (tonumber(e.s) or now), rank and rank + 1 or false}
		end
	end
	r[13] = w
	r[14] = sem
	expect({every, 'hash'})
	local e = schedule(every)
	r[15] = e and {tonumber(e.p) or 0, tonumber(e.s) or 0, e.h or '',
		e.i or '', e.x or ''} or {}
	return r
end

-- A lock another Cluster node serves (its keys cannot be touched here:
-- see inspect_cluster in lock.c) is false.
local out = {}
for k = 1, #KEYS - 5, 6 do
	local here = redis.pcall('EXISTS', KEYS[k])
	if type(here) == 'table' and here.err then
		if not string.find(here.err, 'non local key', 1, true) then
			return redis.error_reply(here.err)
		end
		out[#out + 1] = false
	else
		-- A lock whose keys another program wrote is an error of its
		-- own in the reply: the others are still shown.
		local ok, r = pcall(inspect, KEYS[k], KEYS[k + 1], KEYS[k + 2],
			KEYS[k + 3], KEYS[k + 4], KEYS[k + 5])
		out[#out + 1] = ok and r or {err = damage_of(KEYS[k], r)}
	end
end
return out
