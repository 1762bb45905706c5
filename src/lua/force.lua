-- force: delete the lock whoever holds it, and whatever its keys hold, and
-- wake one waiter; returns what inspect would have shown just before,
-- and, 15th, the keys it removed because they held what rlock never
-- writes ({key, what it held}, ...), its field removed (see the contract).
-- ARGV: the forcer's host, pid and user, history_len, history_ttl_ms: the
-- history gets 'forced', by whom, and whom it removed (a semaphore's or a
-- shared lock's: how many, and the first).
-- A healthy lock loses its holders only: its waiters, its --fifo line,
-- its fence counter and its history stay.  A damaged key goes whatever
-- it is: a lock that something else wrote over can be taken again.
if redis.replicate_commands then redis.replicate_commands() end
local now = clock()
local lock = K.lock
local removed, bad = {}, {}

local function remove(key, what)
	removed[#removed + 1] = {key, what}
	bad[key] = true
	redis.call('DEL', key)
end

-- First, what does not hold what rlock keeps goes: each key of the lock,
-- the fence's number, the holders' records.
local kinds = {lock, 'hash', K.fence, 'string', K.wake, 'list', K.waiters,
	'hash', K.queue, 'zset', K.log, 'stream', K.every, 'hash'}
local function check(list)
	for i = 1, #list, 2 do
		local t = type_of(list[i])
		if t ~= 'none' and t ~= list[i + 1] then
			remove(list[i], 'a ' .. t .. ', not a ' .. list[i + 1])
		end
	end
end
check(kinds)
-- A schedule whose fields rlock did not write goes too (see schedule()
-- in lib.lua).
if not bad[K.every] then
	local fine, why = pcall(schedule, K.every)
	if not fine then
		why = type(why) == 'table' and why.err or tostring(why)
		local pre = 'RLOCK_DAMAGED ' .. K.every .. ' holds '
		if string.sub(why, 1, #pre) == pre then
			why = string.sub(why, #pre + 1)
		end
		remove(K.every, why)
	end
end
local ok, H = true, {live = {}}
if not bad[lock] then
	ok, H = pcall(hold_read, lock, now)
	if not ok then
		local why = type(H) == 'table' and H.err or tostring(H)
		local pre = 'RLOCK_DAMAGED ' .. lock .. ' holds '
		if string.sub(why, 1, #pre) == pre then
			why = string.sub(why, #pre + 1)
		end
		remove(lock, why)
		H = {live = {}}
	end
end
local f = not bad[K.fence] and redis.call('GET', K.fence)
if f and not (string.match(f, '^%d+$') and #f <= 18) then
	remove(K.fence, shown(f) .. ', not a fence number')
	f = false
end
-- Who held it, read before it goes; then every holder goes.
local pttl = #H.live > 0 and H.latest - now or -2
local s = holder_list(H, now)
local x = H.kind == 'x' and H.live[1]
redis.call('DEL', lock)
local function forced(who, n)
	record(lock, A.history_len, A.history_ttl_ms, 'forced', {'bh', A.host, 'bp',
		A.pid, 'bu', A.user, 'h', who[1] or '', 'p', who[2] or '',
		'u', who[3] or '', 'c', who[4] or '', 'f', who[5] or '', 'n', n})
end
local v = {held = 0, pttl_ms = pttl, last_fence = tonumber(f) or 0,
	now_ms = now, waiters = {}, holders = {}, schedule = {},
	removed = removed}
local list = s[R_HOLDERS.list]
if list then
	-- A semaphore or a shared lock: the reply lists who they were.
	local first = list[1]
	forced({first[R_HOLDER.host], first[R_HOLDER.pid],
		first[R_HOLDER.user], first[R_HOLDER.command],
		first[R_HOLDER.fence]}, #list)
	wake_one(K.wake)
	v.held, v.pttl_ms, v.holders = 1, -2, s
	return reply(R_STATUS, v)
end
if x or #removed > 0 then
	forced(x and {x.h, x.p, x.n, x.c, fence_text(x.f)} or {}, x and 1 or 0)
	wake_one(K.wake)
end
if x then
	v.held, v.host, v.pid, v.user, v.command = 1, x.h, x.p, x.n, x.c
	v.acquired_ms, v.ttl_ms, v.fence = x.t, x.l, fence_text(x.f)
	v.token = x.token
end
return reply(R_STATUS, v)
