-- release: delete the lock if, and only if, the token holds it, and wake
-- one waiter.  KEYS: lock, info, wake, waiters.  ARGV: token.  Returns 1
-- or 0.  The wake list holds at most one element and expires soon: a
-- waiter that checked the lock just before the release finds it when it
-- blocks.  A semaphore's holder (see acquire.lua) gives back its own slot;
-- a reader (see lib.lua) leaves the readers, and the last one out takes
-- the mark with it and wakes the waiting writers by name.
local cur = redis.call('GET', KEYS[1])
if cur == SHARED then
	local now = clock()
	local rk = KEYS[1] .. ':readers'
	-- A reader whose time ran out holds nothing: pruned first.
	redis.call('ZREMRANGEBYSCORE', rk, '-inf', now)
	local held = redis.call('ZREM', rk, ARGV[1])
	redis.call('DEL', KEYS[1] .. ':reader:' .. ARGV[1])
	if held == 1 and #readers(KEYS[1], now, false) == 0 then
		redis.call('DEL', KEYS[1], rk)
		wake_each(KEYS[3], writers(KEYS[4], now, ARGV[1]))
		redis.call('RPUSH', KEYS[3], '1')
		redis.call('PEXPIRE', KEYS[3], 10000)
	end
	return held
end
if cur ~= ARGV[1] then
	local limit = cur and tonumber(string.match(cur, '^limit:(%d+)$'))
	for i = 1, limit or 0 do
		local slot = KEYS[1] .. ':slot:' .. i
		if redis.call('GET', slot) == ARGV[1] then
			redis.call('DEL', slot, slot .. ':info')
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
	return 0
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('RPUSH', KEYS[3], '1')
redis.call('PEXPIRE', KEYS[3], 10000)
return 1
