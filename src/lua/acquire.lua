-- acquire: take the lock for a token, unless another token holds it.
-- KEYS: lock, fence, info, wake, waiters, queue, log.  ARGV: token, ttl_ms, host,
-- pid, user, command, slack_ms, waited_ms, fifo, limit, listed (whether an
-- earlier attempt listed the caller among the waiters), shared,
-- history_len, history_ttl_ms (see record() in lib.lua), fence_floor_us
-- (see new_fence() in lib.lua).
-- Returns {1, fence, ttl_ms} when the token now holds the lock, {0, pttl_ms,
-- host, pid, command, acquired_ms, now_ms} when it may not (the holder, for
-- a waiter to show; pttl_ms is when to look again).  A caller that will
-- wait (slack_ms > 0) is listed among the waiters for slack_ms, its lease,
-- which its next attempt renews (see WAITER_RENEW_MS in lock.c); status
-- drops it after that, so a waiter that died is gone within that bound.
-- Its entry keeps the server-clock time of its first attempt (s), which
-- how long it has waited counts from.
-- With fifo = '1' the caller also joins the queue (a sorted set, by the
-- server's clock at its first attempt) and is granted the lock only at its
-- head; a head whose waiter entry has lapsed (dead, gone) is dropped, and
-- a free lock that is not the caller's turn wakes the head (its own list
-- KEYS[4]:TOKEN, which a --fifo waiter blocks on besides the shared one).
-- With limit N > 1 the lock is a semaphore: N slots KEYS[1]:slot:I, each a
-- lock of its own with its info hash KEYS[1]:slot:I:info, and KEYS[1]
-- holding "limit:N" for as long as any slot may be held (so a plain
-- acquire's one GET sees it).  Never more than N hold it; a lock taken with
-- another limit (a plain lock is limit 1) answers {-1, its limit} and
-- nothing changes.
-- With shared = '1' the caller asks for a shared hold (see lib.lua): it
-- joins the readers unless the lock is held exclusively or an exclusive
-- waiter is listed (its entry marked x = 1, until it lapses): a waiting
-- writer stops new readers, and when the last reader leaves it is woken by
-- name.  An exclusive caller finds a shared lock busy while any reader
-- other than itself is live; a lone reader asking exclusively upgrades.
-- A semaphore and a shared lock do not mix: {-1, 0} says it is shared.
-- The fence counter never expires and only grows (to at least the server's
-- TIME in microseconds, under 2^53 until 2255); a token that already holds
-- the lock keeps its fence and its acquire time.
-- A new holder is recorded in the history ('acquired'); a plain lock whose
-- newest event is still an 'acquired' when it is taken afresh was never
-- released: an 'expired' event for that run goes first.
if redis.replicate_commands then redis.replicate_commands() end
local limit = tonumber(ARGV[10]) or 1
local shared = ARGV[12] == '1'
local cur = redis.call('GET', KEYS[1])
-- What this script may write, checked before it writes (see lib.lua); a
-- semaphore's mark on the lock key, and the limit it says.
local marked = expect_lock(KEYS[1], cur, KEYS[3], KEYS[5], KEYS[6],
	KEYS[2])
if shared and cur ~= SHARED then
	expect({KEYS[1] .. ':readers', 'zset'})
end
if shared then
	expect({KEYS[1] .. ':reader:' .. ARGV[1], 'hash'})
end

-- The caller may not have it now: list it among the waiters (when it will
-- wait) and say who holds it (h) and when to look again (pttl).  An
-- exclusive waiter (writer set) is marked so, which keeps new readers out.
local function busy(pttl, h, writer)
	local now = clock()
	local due = tonumber(ARGV[7])
	if due > 0 then
		-- Since the first attempt: waited_ms was taken before the
		-- request went out, which may have blocked a while first.
		local since = now - tonumber(ARGV[8])
		local ok, e = pcall(cjson.decode,
			redis.call('HGET', KEYS[5], ARGV[1]) or '')
		if ok and type(e) == 'table' and tonumber(e.s) then
			since = math.min(since, tonumber(e.s))
		end
		redis.call('HSET', KEYS[5], ARGV[1], cjson.encode({u = now + due,
			s = since, h = ARGV[3], p = ARGV[4],
			n = ARGV[5], c = ARGV[6], x = writer and 1 or nil}))
		-- Both keys outlive every entry: never shorten them.
		if redis.call('PTTL', KEYS[5]) < due + 10000 then
			redis.call('PEXPIRE', KEYS[5], due + 10000)
		end
		if ARGV[9] == '1' and redis.call('PTTL', KEYS[6]) < due + 10000 then
			redis.call('PEXPIRE', KEYS[6], due + 10000)
		end
	end
	return {0, pttl, h[1], h[2], h[3], h[4], now}
end

-- Record a new holder (kind: '' plain, 'shared', 'limit:N').  How long
-- it waited is by the server's clock, from its waiter entry when it has
-- one (the waited_ms argument was taken when the request was sent, before
-- its BLPOP).
local function acquired(fence, kind)
	if tonumber(ARGV[13]) <= 0 then
		return
	end
	local waited = ARGV[8]
	local ok, e = pcall(cjson.decode, redis.call('HGET', KEYS[5], ARGV[1]) or '')
	if ok and type(e) == 'table' and tonumber(e.s) then
		waited = math.max(clock() - tonumber(e.s), tonumber(waited))
	end
	record_acquired(KEYS[1], ARGV[13], ARGV[14], {ARGV[3], ARGV[4],
		ARGV[5], ARGV[6]}, fence, waited, ARGV[1], kind)
end

-- Take key (with its info hash) for the caller, or keep it if it holds it.
local function take(key, info, cur, fresh)
	local ttl = tonumber(ARGV[2])
	local fence
	if cur then
		fence = tonumber(redis.call('HGET', info, 'fence'))
		redis.call('PEXPIRE', key, ttl)
	end
	if not fence then
		local t = redis.call('TIME')
		if not cur then
			redis.call('SET', key, ARGV[1], 'PX', ttl, 'NX')
		end
		fence = new_fence(KEYS[2], t, ARGV[15])
		redis.call('DEL', info, fresh)
		acquired(fence, key == KEYS[1] and '' or 'limit:' .. limit)
		redis.call('HSET', info, 'token', ARGV[1], 'fence', fence,
			'acquired_ms', t[1] * 1000 + math.floor(t[2] / 1000))
	end
	redis.call('HSET', info, 'host', ARGV[3], 'pid', ARGV[4], 'user',
		ARGV[5], 'command', ARGV[6], 'ttl_ms', ttl)
	redis.call('PEXPIRE', info, ttl)
	if ARGV[11] == '1' then
		redis.call('HDEL', KEYS[5], ARGV[1])
	end
	return {1, fence, ttl}
end

-- Join the readers (or stay one: mine), with a fence of one's own.
local function share(now, t, mine)
	local ttl = tonumber(ARGV[2])
	local rk, info = KEYS[1] .. ':readers', KEYS[1] .. ':reader:' .. ARGV[1]
	local fence = mine and tonumber(redis.call('HGET', info, 'fence'))
	if not fence then
		fence = new_fence(KEYS[2], t, ARGV[15])
		redis.call('DEL', info)
		redis.call('HSET', info, 'token', ARGV[1], 'fence', fence,
			'acquired_ms', now)
		acquired(fence, SHARED)
	end
	redis.call('ZADD', rk, now + ttl, ARGV[1])
	redis.call('HSET', info, 'host', ARGV[3], 'pid', ARGV[4], 'user',
		ARGV[5], 'command', ARGV[6], 'ttl_ms', ttl)
	redis.call('PEXPIRE', info, ttl)
	-- The mark and the set outlive every reader.
	redis.call('SET', KEYS[1], SHARED, 'KEEPTTL')
	for _, k in ipairs({KEYS[1], rk}) do
		if redis.call('PTTL', k) < ttl then
			redis.call('PEXPIRE', k, ttl)
		end
	end
	if ARGV[11] == '1' then
		redis.call('HDEL', KEYS[5], ARGV[1])
	end
	-- Another waiting reader may come in too: pass the wake on.
	if redis.call('EXISTS', KEYS[5]) == 1 then
		wake_one(KEYS[4])
	end
	return {1, fence, ttl}
end

-- The metadata busy() shows of a reader.
local function reader(tok)
	return redis.call('HMGET', KEYS[1] .. ':reader:' .. tok, 'host', 'pid',
		'command', 'acquired_ms')
end

if limit > 1 or marked then
	if cur == SHARED then
		return {-1, 0}
	end
	if cur and (marked or 1) ~= limit then
		return {-1, marked or 1}
	end
	local mine, free, soonest, first
	for i = 1, limit do
		local v = redis.call('GET', KEYS[1] .. ':slot:' .. i)
		if v == ARGV[1] then
			mine = i
			break
		elseif not v then
			free = free or i
		else
			local p = redis.call('PTTL', KEYS[1] .. ':slot:' .. i)
			if not soonest or (p >= 0 and p < soonest) then
				soonest, first = p, i
			end
		end
	end
	local i = mine or free
	if not i then
		return busy(soonest, redis.call('HMGET', KEYS[1] .. ':slot:' ..
			first .. ':info', 'host', 'pid', 'command', 'acquired_ms'),
			false)
	end
	local slot = KEYS[1] .. ':slot:' .. i
	local r = take(slot, slot .. ':info', mine and ARGV[1] or nil,
		slot .. ':info')
	-- The mark outlives every slot that may still be held.
	redis.call('SET', KEYS[1], 'limit:' .. limit, 'KEEPTTL')
	if redis.call('PTTL', KEYS[1]) < r[3] then
		redis.call('PEXPIRE', KEYS[1], r[3])
	end
	return r
end

if shared and cur ~= ARGV[1] then
	if cur and cur ~= SHARED then
		return busy(redis.call('PTTL', KEYS[1]), redis.call('HMGET',
			KEYS[3], 'host', 'pid', 'command', 'acquired_ms'), false)
	end
	local now, t = clock()
	local live = readers(KEYS[1], now, true)
	local mine = false
	for _, tok in ipairs(live) do
		mine = mine or tok == ARGV[1]
	end
	if not mine then
		local w, due = writers(KEYS[5], now, ARGV[1])
		if #w > 0 then
			if #live == 0 then
				-- Free, and a writer's turn: wake it by name.
				wake_each(KEYS[4], w)
				return busy(due, {false, false, false, false}, false)
			end
			return busy(redis.call('PTTL', KEYS[1]), reader(live[1]),
				false)
		end
	end
	return share(now, t, mine)
end
if cur == SHARED then
	local now = clock()
	local live = readers(KEYS[1], now, true)
	for _, tok in ipairs(live) do
		if tok ~= ARGV[1] then
			return busy(redis.call('PTTL', KEYS[1]), reader(tok), true)
		end
	end
	-- No reader left but (maybe) the caller: the lock is free.
	redis.call('DEL', KEYS[1], KEYS[1] .. ':readers',
		KEYS[1] .. ':reader:' .. ARGV[1])
	cur = nil
end

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
	local pttl = redis.call('PTTL', KEYS[1])
	if not cur then
		-- Free, but not our turn: wake the head, and look again when
		-- its place would lapse.
		wake_one(KEYS[4] .. ':' .. head)
		pttl = head_due or 0
	end
	return busy(pttl, h, true)
end
if head then
	redis.call('ZREM', KEYS[6], ARGV[1])
end
return take(KEYS[1], KEYS[3], cur, KEYS[4])
