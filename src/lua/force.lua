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
-- the mark's limit, the fence's number, the holders' hashes.
local kinds = {lock, 'string', KEYS[2], 'hash', KEYS[3], 'string', KEYS[4],
	'list', lock .. ':waiters', 'hash', lock .. ':queue', 'zset',
	lock .. ':holders', 'zset', lock .. ':log', 'stream',
	lock .. ':every', 'hash'}
local function check(list)
	for i = 1, #list, 2 do
		local t = type_of(list[i])
		if t ~= 'none' and t ~= list[i + 1] then
			remove(list[i], 'a ' .. t .. ', not a ' .. list[i + 1])
		end
	end
end
check(kinds)
local cur = not bad[lock] and redis.call('GET', lock)
local marked, limit = true, nil
if cur then
	marked, limit = pcall(limit_of, lock, cur)
	if not marked then
		remove(lock, shown(cur) .. ', not a limit of 1 to ' .. LIMIT_MAX)
		limit = nil
	end
end
local f = not bad[KEYS[3]] and redis.call('GET', KEYS[3])
if f and not (string.match(f, '^%d+$') and #f <= 18) then
	remove(KEYS[3], shown(f) .. ', not a fence number')
	f = false
end
if (cur == SHARED or limit) and not bad[lock .. ':holders'] then
	for _, tok in ipairs(redis.call('ZRANGE', lock .. ':holders', 0, -1)) do
		check({lock .. ':holder:' .. tok, 'hash'})
	end
end

-- Who held it, read before it goes.
local s, h, pttl = {}, {}, redis.call('PTTL', lock)
if cur and marked and (cur == SHARED or limit) then
	s = holders(lock, now, false)
elseif cur and marked and not bad[KEYS[2]] then
	h = redis.call('HMGET', KEYS[2], 'host', 'pid', 'user', 'command',
		'acquired_ms', 'ttl_ms', 'fence')
end

-- Every holder goes: a marked lock's holders and their hashes, the
-- lock's own.
if not bad[lock .. ':holders'] then
	for _, tok in ipairs(redis.call('ZRANGE', lock .. ':holders', 0, -1)) do
		redis.call('DEL', lock .. ':holder:' .. tok)
	end
end
redis.call('DEL', lock, KEYS[2], lock .. ':holders')
-- A plain lock's holder: a token in the lock key.
local held = cur and marked and cur ~= SHARED and not limit

local function forced(who, n)
	record(lock, ARGV[4], ARGV[5], 'forced', {'bh', ARGV[1], 'bp',
		ARGV[2], 'bu', ARGV[3], 'h', who[1] or '', 'p', who[2] or '',
		'u', who[3] or '', 'c', who[4] or '', 'f', who[5] or '', 'n', n})
end

if s[2] then
	-- A semaphore or a shared lock: the reply lists who they were.
	if #s[2] > 0 then
		local first = s[2][1]
		forced({first[2], first[3], first[4], first[5], first[8]}, #s[2])
	end
	wake_one(KEYS[4])
	return {#s[2] > 0 and 1 or 0, -2,
		tonumber(f) or 0, now, false, false, false, false, false,
		false, false, false, {}, s, removed}
end
if held or #removed > 0 then
	forced({h[1], h[2], h[3], h[4], h[7]}, held and 1 or 0)
	wake_one(KEYS[4])
end
local r = {held and 1 or 0, pttl, tonumber(f) or 0, now}
for i = 1, 7 do
	r[4 + i] = h[i] or false
end
r[12] = cur or false
r[13] = {}
r[14] = {}
r[15] = removed
return r
