-- release: delete the lock if, and only if, the token holds it, and give
-- it to the next waiter or wake one.  KEYS: lock, info, wake, waiters,
-- fence, queue.  ARGV: token, outcome (exec's "exit:N", "signal:NAME" or
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
local cur = redis.call('GET', KEYS[1])
local K = {KEYS[1], KEYS[2], KEYS[5], KEYS[3], KEYS[4], KEYS[6]}
local hist = {ARGV[3], ARGV[4]}
local direct = ARGV[8] == '1'
-- A waiter giving up releases too: its entry and its place in the line
-- go, and a lock handed to it after its last attempt goes to the next.
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])

-- Record the release of the hold described by the hash info.
local function released(info, kind)
	if tonumber(ARGV[3]) <= 0 then
		return
	end
	local h = redis.call('HMGET', info, 'host', 'pid', 'user', 'command',
		'fence', 'acquired_ms')
	local now = clock()
	record(KEYS[1], ARGV[3], ARGV[4], 'released', {'h', h[1] or '', 'p',
		h[2] or '', 'u', h[3] or '', 'c', h[4] or '', 'f', h[5] or '',
		'd', h[6] and now - tonumber(h[6]) or '', 'x', ARGV[2], 'r',
		run_id(ARGV[1]), 'k', kind})
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
	local held = redis.call('ZREM', rk, ARGV[1])
	if held == 1 then
		released(KEYS[1] .. ':reader:' .. ARGV[1], SHARED)
	end
	redis.call('DEL', KEYS[1] .. ':reader:' .. ARGV[1])
	if held == 1 and #readers(KEYS[1], now, false) == 0 then
		-- (An exclusive holder's hash is stale while it is shared.)
		redis.call('DEL', KEYS[1], rk, KEYS[2])
		if direct and hand_over(K, hist, false, false) then
			return 1
		end
		wake_each(KEYS[3], writers(KEYS[4], now, ARGV[1]))
		redis.call('RPUSH', KEYS[3], '1')
		redis.call('PEXPIRE', KEYS[3], 10000)
	end
	return held == 1 and 1 or lost()
end
if cur ~= ARGV[1] then
	local limit = cur and tonumber(string.match(cur, '^limit:(%d+)$'))
	for i = 1, limit or 0 do
		local slot = KEYS[1] .. ':slot:' .. i
		if redis.call('GET', slot) == ARGV[1] then
			released(slot .. ':info', cur)
			redis.call('DEL', slot, slot .. ':info')
			if direct and hand_over_slot(K, hist, slot, cur) then
				return 1
			end
			redis.call('RPUSH', KEYS[3], '1')
			redis.call('PEXPIRE', KEYS[3], 10000)
			-- The last one out takes the mark with it.
			for j = 1, limit do
				if redis.call('EXISTS', KEYS[1] .. ':slot:' .. j) == 1 then
					return 1
				end
			end
			redis.call('DEL', KEYS[1])
			return 1
		end
	end
	return lost()
end
released(KEYS[2], '')
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
if direct and hand_over(K, hist, true,
    redis.call('EXISTS', KEYS[6]) == 1) then
	return 1
end
redis.call('RPUSH', KEYS[3], '1')
redis.call('PEXPIRE', KEYS[3], 10000)
return 1
