-- force: delete the lock whoever holds it, and whatever its keys hold, and
-- wake one waiter; returns what inspect would have shown just before,
-- and, 15th, the keys it removed because they held what rlock never
-- writes ({key, what it held}, ...).  KEYS: lock, info, fence, wake, log.
-- ARGV: the forcer's host, pid and user, history_len, history_ttl_ms: the
-- history gets 'forced', by whom, and whom it removed (a semaphore's or a
-- shared lock's: how many, and the first).
-- A healthy lock loses its holders only: its waiters, its --fifo line,
-- its fence counter and its history stay.  A damaged key goes whatever
-- it is: a lock that something else wrote over can be taken again.
if redis.replicate_commands then redis.replicate_commands() end
local now = clock()
local lock = KEYS[1]
local removed, bad = {}, {}

local function remove(key, what)
	removed[#removed + 1] = {key, what}
	bad[key] = true
	redis.call('DEL', key)
end

-- First, what does not hold what rlock keeps goes: each key of the lock,
-- the fence's number, the holders' records.
local kinds = {lock, 'hash', KEYS[2], 'hash', KEYS[3], 'string', KEYS[4],
	'list', lock .. ':waiters', 'hash', lock .. ':queue', 'zset',
	lock .. ':log', 'stream', lock .. ':every', 'hash'}
local function check(list)
	for i = 1, #list, 2 do
		local t = type_of(list[i])
		if t ~= 'none' and t ~= list[i + 1] then
			remove(list[i], 'a ' .. t .. ', not a ' .. list[i + 1])
		end
	end
end
check(kinds)
-- (KEYS[2], the hash of a layout before one record: whatever it holds
-- goes with the holders.)
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
local f = not bad[KEYS[3]] and redis.call('GET', KEYS[3])
if f and not (string.match(f, '^%d+$') and #f <= 18) then
	remove(KEYS[3], shown(f) .. ', not a fence number')
	f = false
end
-- Who held it, read before it goes; then every holder goes.
local pttl = #H.live > 0 and H.latest - now or -2
local s = holder_list(H, now)
local x = H.kind == 'x' and H.live[1]
redis.call('DEL', lock, KEYS[2])
local function forced(who, n)
	record(lock, ARGV[4], ARGV[5], 'forced', {'bh', ARGV[1], 'bp',
		ARGV[2], 'bu', ARGV[3], 'h', who[1] or '', 'p', who[2] or '',
		'u', who[3] or '', 'c', who[4] or '', 'f', who[5] or '', 'n', n})
end
if s[2] then
	-- A semaphore or a shared lock: the reply lists who they were.
	local first = s[2][1]
	forced({first[2], first[3], first[4], first[5], first[8]}, #s[2])
	wake_one(KEYS[4])
	return {1, -2, tonumber(f) or 0, now, false, false, false, false,
		false, false, false, false, {}, s, removed}
end
if x or #removed > 0 then
	forced(x and {x.h, x.p, x.n, x.c, fence_text(x.f)} or {}, x and 1 or 0)
	wake_one(KEYS[4])
end
local r = {x and 1 or 0, pttl, tonumber(f) or 0, now}
if x then
	local h = {x.h, x.p, x.n, x.c, x.t, x.l, fence_text(x.f)}
	for i = 1, 7 do
		r[4 + i] = h[i] or false
	end
else
	for i = 5, 11 do
		r[i] = false
	end
end
r[12] = x and x.token or false
r[13] = {}
r[14] = {}
r[15] = removed
return r
