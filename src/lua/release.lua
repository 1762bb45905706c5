-- release: delete the lock if, and only if, the token holds it, and give
-- it to the next waiter or wake one.  KEYS: lock, info, wake, waiters,
-- fence, queue, log.  ARGV: token, outcome (exec's "exit:N", "signal:NAME" or
-- "max-runtime", "release" for the release command, "" for a give-back),
-- history_len, history_ttl_ms, the caller's host, pid and user, and
-- hand_over ('1': one server; see hand_over() in lib.lua: with several,
-- each would choose on its own).  Returns 1 or 0.  The wake list holds
-- at most one element and expires soon: a waiter that checked the lock
-- just before the release finds it when it blocks.  A semaphore's holder
-- (see acquire.lua) gives back its own slot; a reader (see lib.lua)
-- leaves the readers, and the last one out takes the mark with it and
-- wakes the waiting writers by name.
-- The history gets 'released' (how long it was held, the outcome), or,
-- when the token no longer holds it and an outcome is given, 'lost'.
-- Under memory pressure (maxmemory reached, noeviction) the server
-- refuses a script's writes that need memory until it has written
-- something: the deletions come first, and the history after them.
local cur = redis.call('GET', KEYS[1])
local K = {KEYS[1], KEYS[2], KEYS[5], KEYS[3], KEYS[4], KEYS[6]}
local hist = {ARGV[3], ARGV[4]}
local direct = ARGV[8] == '1'
-- What this script may write, checked before it writes (see lib.lua).
local limit = expect_lock(KEYS[1], cur, KEYS[2], KEYS[4], KEYS[6], nil)
-- (A hand-over may let readers in.)
expect({KEYS[1] .. ':readers', 'zset'})
if cur == SHARED then
	expect({KEYS[1] .. ':reader:' .. ARGV[1], 'hash'})
end
-- A semaphore's slot that the token holds, and its hash checked.
local my_slot
if cur ~= ARGV[1] and limit then
	for i = 1, limit do
		local slot = KEYS[1] .. ':slot:' .. i
		if redis.call('GET', slot) == ARGV[1] then
			my_slot = slot
			expect({slot .. ':info', 'hash'})
			break
		end
	end
end
-- A waiter giving up releases too: its entry and its place in the line
-- go, and a lock handed to it after its last attempt goes to the next.
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])

-- The history's 'released' of the hold described by the hash info, read
-- before the hash goes; record(KEYS[1], unpack(it)) writes it after.
local function released(info, kind)
	if tonumber(ARGV[3]) <= 0 then
		return nil
	end
	local h = redis.call('HMGET', info, 'host', 'pid', 'user', 'command',
		'fence', 'acquired_ms')
	local now, since = clock(), tonumber(h[6])
	return {ARGV[3], ARGV[4], 'released', {'h', h[1] or '', 'p',
		h[2] or '', 'u', h[3] or '', 'c', h[4] or '', 'f', h[5] or '',
		'd', since and now - since or '', 'x', ARGV[2], 'r',
		run_id(ARGV[1]), 'k', kind}}
end

local function recorded(ev)
	if ev then
		record(KEYS[1], unpack(ev))
	end
end

local function lost()
	if ARGV[2] ~= '' then
		record(KEYS[1], ARGV[3], ARGV[4], 'lost', {'h', ARGV[5], 'p',
			ARGV[6], 'u', ARGV[7], 'x', ARGV[2], 'y',
			"gone or another's at release", 'r', run_id(ARGV[1])})
	end
	return 0
end

if cur == SHARED then
	local now = clock()
	local rk = KEYS[1] .. ':readers'
	-- A reader whose time ran out holds nothing: pruned first.
	redis.call('ZREMRANGEBYSCORE', rk, '-inf', now)
	local held = redis.call('ZRANK', rk, ARGV[1]) and 1 or 0
	local ev = held == 1 and released(KEYS[1] .. ':reader:' .. ARGV[1],
		SHARED)
	redis.call('ZREM', rk, ARGV[1])
	redis.call('DEL', KEYS[1] .. ':reader:' .. ARGV[1])
	if held == 1 and #readers(KEYS[1], now, false) == 0 then
		-- (An exclusive holder's hash is stale while it is shared.)
		redis.call('DEL', KEYS[1], rk, KEYS[2])
		recorded(ev)
		if direct and hand_over(K, hist, false, false) then
			return 1
		end
		wake_each(KEYS[3], writers(KEYS[4], now, ARGV[1]))
		wake_one(KEYS[3])
		return 1
	end
	recorded(ev)
	return held == 1 and 1 or lost()
end
if cur ~= ARGV[1] then
	if not my_slot then
		return lost()
	end
	local ev = released(my_slot .. ':info', cur)
	redis.call('DEL', my_slot, my_slot .. ':info')
	recorded(ev)
	if direct and hand_over_slot(K, hist, my_slot, cur) then
		return 1
	end
	wake_one(KEYS[3])
	-- The last one out takes the mark with it.
	for j = 1, limit do
		if redis.call('EXISTS', KEYS[1] .. ':slot:' .. j) == 1 then
			return 1
		end
	end
	redis.call('DEL', KEYS[1])
	return 1
end
local ev = released(KEYS[2], '')
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
recorded(ev)
if direct and hand_over(K, hist, true,
    redis.call('EXISTS', KEYS[6]) == 1) then
	return 1
end
wake_one(KEYS[3])
return 1
