-- inspect: everything status shows about some locks, in one call.
-- KEYS: each lock's keys (KEY_COUNT a lock, in the contract's order).
-- Returns a list with, for each lock, a status reply (see the contract),
-- the holder's fields false when free; schedule is {} for a name never
-- run with --every; waiters a list of waiter replies, place being the
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

local function inspect(k)
	local lock = KEYS[k + KEY.lock]
	local waiters, queue = KEYS[k + KEY.waiters], KEYS[k + KEY.queue]
	local H = hold_read(lock, now)
	-- The schedule read (and checked) before the waiters' clean-up
	-- below writes.
	expect({KEYS[k + KEY.every], 'hash'})
	local e = schedule(KEYS[k + KEY.every])
	local v = {held = #H.live > 0 and 1 or 0,
		pttl_ms = #H.live > 0 and H.latest - now or -2,
		last_fence = tonumber(redis.call('GET',
			KEYS[k + KEY.fence])) or 0,
		now_ms = now, holders = holder_list(H, now)}
	local x = H.kind == 'x' and H.live[1]
	if x then
		v.host, v.pid, v.user, v.command = x.h, x.p, x.n, x.c
		v.acquired_ms, v.ttl_ms, v.fence = x.t, x.l, fence_text(x.f)
		v.token = x.token
		-- A newcomer's exec --replace asked it to stop (see acquire.lua).
		v.replace_host, v.replace_pid = x.qh, x.qp
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
			w[#w + 1] = reply(R_WAITER, {token = all[i], host = e.h,
				pid = e.p, user = e.n, command = e.c,
				waiting_ms = now - (tonumber(e.s) or now),
				place = rank and rank + 1 or false})
		end
	end
	v.waiters = w
	-- A run that has not ended (x: '') but no longer holds the lock
	-- died without a word (its release never came): so said, never
	-- "running" while the lock is free.
	local out = e and e.x or ''
	if e and not tonumber(e.s) then
		out = 'never-started'
	elseif e and out == '' and not (x and run_id(x.token) == e.r) then
		out = 'ended-without-release'
	end
	local z = e and schedule_lib().paused(e, now)
	v.schedule = e and tonumber(e.p) and reply(R_SCHEDULE, {
		period_ms = tonumber(e.p), last_start_ms = tonumber(e.s) or 0,
		host = e.h or '', pid = e.i or '', outcome = out,
		slot_ms = schedule_lib().centre(e) or 0,
		grace_ms = tonumber(e.g) or 0,
		declared_ms = tonumber(e.d) or 0,
		last_success_ms = tonumber(e.ok) or 0,
		failures = tonumber(e.nf) or 0,
		paused_until_ms = z and (tonumber(z) or -1) or 0,
		paused_by = z and e.zb or '',
		paused_ms = z and tonumber(e.zs) or 0, cron = e.e or '',
		cron_tz = e.tz or ''}) or {}
	v.removed = {}
	return reply(R_STATUS, v)
end
-- A lock another Cluster node serves (its keys cannot be touched here:
-- see inspect_cluster in lock.c) is false.
local out = {}
for k = 0, #KEYS - KEY_COUNT, KEY_COUNT do
	local here = redis.pcall('EXISTS', KEYS[k + 1])
	if type(here) == 'table' and here.err then
		if not string.find(here.err, 'non local key', 1, true) then
			-- (As run() words any error: NOPERM, LOADING...)
			error(here)
		end
		out[#out + 1] = false
	else
		-- A lock whose keys another program wrote is an error of its
		-- own in the reply: the others are still shown.
		local ok, r = pcall(inspect, k + 1)
		out[#out + 1] = ok and r or {err = damage_of(KEYS[k + 1], r)}
	end
end
return out
