-- acquire: take the lock for a token, unless another token holds it.
-- KEYS: lock, fence, info, wake, waiters, queue.  ARGV: token, ttl_ms, host,
-- pid, user, command, slack_ms, waited_ms, fifo.
-- Returns {1, fence, ttl_ms} when the token now holds the lock, {0, pttl_ms,
-- host, pid, command, acquired_ms, now_ms} when it may not (the holder, for
-- a waiter to show; pttl_ms is when to look again).  A caller that will
-- wait (slack_ms > 0) is listed among the waiters until its next attempt is
-- due: the holder's PTTL (5 s without one) plus slack_ms; status drops it
-- after that, so a waiter that died is gone within that bound.
-- With fifo = '1' the caller also joins the queue (a sorted set, by the
-- server's clock at its first attempt) and is granted the lock only at its
-- head; a head whose waiter entry has lapsed (dead, gone) is dropped, and
-- a free lock that is not the caller's turn wakes the head (its own list
-- KEYS[4]:TOKEN, which a --fifo waiter blocks on besides the shared one).
-- The fence counter never expires and only grows (to at least the server's
-- TIME in microseconds, under 2^53 until 2255); a token that already holds
-- the lock keeps its fence and its acquire time.
if redis.replicate_commands then redis.replicate_commands() end
local cur = redis.call('GET', KEYS[1])
local head, head_due
if ARGV[9] == '1' and cur ~= ARGV[1] then
	local t = redis.call('TIME')
	local now = t[1] * 1000 + math.floor(t[2] / 1000)
	redis.call('ZADD', KEYS[6], 'NX', t[1] * 1000000 + t[2], ARGV[1])
	for i = 1, 64 do
		head = redis.call('ZRANGE', KEYS[6], 0, 0)[1]
		if not head or head == ARGV[1] then
			break
		end
		local ok, e = pcall(cjson.decode,
			redis.call('HGET', KEYS[5], head) or '')
		if ok and type(e) == 'table' and (tonumber(e.u) or 0) >= now then
			head_due = e.u - now
			break
		end
		redis.call('ZREM', KEYS[6], head)
		redis.call('HDEL', KEYS[5], head)
	end
end
if (cur and cur ~= ARGV[1]) or (head and head ~= ARGV[1]) then
	local h = redis.call('HMGET', KEYS[3], 'host', 'pid', 'command',
		'acquired_ms')
	local t = redis.call('TIME')
	local now = t[1] * 1000 + math.floor(t[2] / 1000)
	local pttl = redis.call('PTTL', KEYS[1])
	if not cur then
		-- Free, but not our turn: wake the head, and look again when
		-- its place would lapse.
		local w = KEYS[4] .. ':' .. head
		redis.call('RPUSH', w, '1')
		redis.call('PEXPIRE', w, 10000)
		pttl = head_due or 0
	end
	local slack = tonumber(ARGV[7])
	if slack > 0 then
		local due = (pttl >= 0 and pttl or 5000) + slack
		redis.call('HSET', KEYS[5], ARGV[1], cjson.encode({u = now + due,
			s = now - tonumber(ARGV[8]), h = ARGV[3], p = ARGV[4],
			n = ARGV[5], c = ARGV[6]}))
		redis.call('PEXPIRE', KEYS[5], due + 10000)
		if ARGV[9] == '1' then
			redis.call('PEXPIRE', KEYS[6], due + 10000)
		end
	end
	return {0, pttl, h[1], h[2], h[3], h[4], now}
end
if head then
	redis.call('ZREM', KEYS[6], ARGV[1])
end
local ttl = tonumber(ARGV[2])
local fence
if cur then
	fence = tonumber(redis.call('HGET', KEYS[3], 'fence'))
	redis.call('PEXPIRE', KEYS[1], ttl)
end
if not fence then
	local t = redis.call('TIME')
	if not cur then
		redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl, 'NX')
	end
	-- Never below the server's clock in microseconds: a counter lost with
	-- the data (a restart without persistence, an AOF that missed the last
	-- writes, a failover to a replica that lagged) comes back above every
	-- fence handed out before, while the clocks stay roughly in step.
	local floor = t[1] * 1000000 + t[2]
	fence = redis.call('INCR', KEYS[2])
	if fence < floor then
		fence = floor
		redis.call('SET', KEYS[2], string.format('%.0f', floor))
	end
	redis.call('DEL', KEYS[3], KEYS[4])
	redis.call('HSET', KEYS[3], 'token', ARGV[1], 'fence', fence,
		'acquired_ms', t[1] * 1000 + math.floor(t[2] / 1000))
end
redis.call('HSET', KEYS[3], 'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5],
	'command', ARGV[6], 'ttl_ms', ttl)
redis.call('PEXPIRE', KEYS[3], ttl)
if ARGV[7] ~= '0' then
	redis.call('HDEL', KEYS[5], ARGV[1])
end
return {1, fence, ttl}
