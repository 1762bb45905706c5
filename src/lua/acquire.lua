-- acquire: take the lock for a token, if the one rule of lib.lua (see
-- judge()) lets it in beside those who hold it.
-- KEYS: lock, fence, info, wake, waiters, queue, log, none, every.  ARGV:
-- token, ttl_ms,
-- host, pid, user, command, slack_ms, waited_ms, fifo, limit, listed
-- (whether an earlier attempt listed the caller among the waiters),
-- shared, history_len, history_ttl_ms (see record() in lib.lua),
-- fence_floor_us (see new_fence() in lib.lua), run (the acquire's run id,
-- the same for each of its attempts), keep_listed ('1': a quorum's
-- attempt, whose waiter entry stays when it wins here, see below), every
-- (exec --every: the period in ms, '0' without), retry ('1':
-- --retry-failed).
-- Returns {1, fence, ttl_ms} when the token now holds the lock, {0, pttl_ms,
-- host, pid, command, acquired_ms, now_ms} when it may not (the holder, for
-- a waiter to show; pttl_ms is when to look again), {-1, limit} when the
-- name is held in a way that this ask cannot mix with (nothing changes),
-- {-2, started_ms, host, pid, now_ms} when --every refuses the start (the
-- period's run started then, there: see schedule_closed() in lib.lua),
-- {-3, host, pid} when the caller, a reader, asks to upgrade while
-- another reader's upgrade is pending (that reader's host and pid;
-- nothing changes but the caller's own waiter entry, which goes).
--
-- The rule, judged on the live holders only:
--  - a free name: any kind of holder takes it;
--  - a plain (exclusive) holder: nobody else; its own token again keeps
--    its hold, fence and acquire time (a re-acquire);
--  - readers (--shared): another reader joins unless an exclusive waiter
--    is listed (a waiting writer stops new readers); an exclusive ask gets
--    in only when no reader but the caller is left (a lone reader's
--    upgrade), and while one reader's upgrade waits, another's is
--    refused (-3: each would wait for the other to stop reading); a
--    --limit ask does not mix (-1, 0);
--  - a semaphore (--limit N): up to N holders asking with N; any other ask
--    does not mix (-1, N).  A plain holder's name asked with --limit N
--    does not mix either (-1, 1).
-- A --fifo caller does not barge: it takes what the rule allows only when
-- no waiter placed before it is still waiting (of any kind), and wakes
-- the first instead.
-- A caller that will wait (slack_ms > 0) is listed among the waiters for
-- slack_ms, its lease, which its next attempt renews (see WAITER_RENEW_MS
-- in lock.c); status drops it after that, so a waiter that died is gone
-- within that bound.  Its entry keeps the server-clock time of its first
-- attempt, in milliseconds (s: how long it has waited counts from it) and
-- in microseconds (o: its place in the one order of waiting, see
-- place_of() in lib.lua), neither of which a later attempt moves, and
-- its kind (k: 'x', 's' or 'l:N').  With fifo = '1' the caller also joins
-- the line (a sorted set, scored by the same place), which status shows
-- as its place.  A grant takes the caller off the list,
-- except a quorum's (keep_listed): a server where it won keeps its entry
-- until its release, so that readers stay out while it tries again
-- elsewhere.
-- Each hold records the run that took it (a, see lib.lua); a hold handed
-- over by a release (a = 'g') is claimed by its waiter's attempt.
-- A new holder is recorded in the history ('acquired'), and nothing else:
-- nothing of the history is read.  A plain lock taken afresh whose newest
-- event is still its holder's 'acquired' was never released: the readers
-- show that run's 'expired' (see record_acquired() in lib.lua).
if redis.replicate_commands then redis.replicate_commands() end
local limit = tonumber(ARGV[10]) or 1
local shared = ARGV[12] == '1'
local token, ttl = ARGV[1], tonumber(ARGV[2])
local now, t = clock()
local cur = redis.call('GET', KEYS[1])
-- What this script may write, checked before it writes (see lib.lua),
-- the holders' set too when the caller would mark the name.  (A holder's
-- own hash is deleted before it is written: any type will do.)  (bare:
-- the hash, the waiters and the line are all absent: nobody waits, so the
-- caller has no entry to read, no waiter to defer to or wake, nor a hash
-- to clear.)
local want = shared and 's' or limit > 1 and 'l:' .. limit or 'x'
local _, fence_seen, bare = expect_lock(KEYS[1], cur, KEYS[3], KEYS[5],
	KEYS[6], KEYS[2], want ~= 'x' and KEYS[1] .. ':holder:' .. token)
-- (Whether this holder's hash is surely absent: no DEL before it is
-- written.)
local fresh = bare and not (cur == SHARED or limit_of(KEYS[1], cur))
local kind, held_limit, live, ends = judge(KEYS[1], cur, now, true)
-- The caller's own entry, if an earlier attempt listed it, and its place:
-- the entry's while its lease lasts, else now (it comes after everyone
-- listed: an entry that lapsed was nobody's place meanwhile, and others
-- may have been placed and served before it came back).  Its first
-- attempt's time (s) stays, for how long it has waited.
local own
if not bare then
	local ok, e = pcall(cjson.decode, redis.call('HGET', KEYS[5], token) or
		'')
	if ok and type(e) == 'table' and tonumber(e.s) then
		own = e
	end
end
local place = own and (tonumber(own.u) or 0) > now and place_of(own) or
	t[1] * 1000000 + t[2]
if not kind then
	cur = nil
end

-- Held in a way this ask does not mix with: a usage error, no change.
if kind == 'limit' and want ~= 'l:' .. held_limit then
	return {-1, held_limit}
elseif kind == SHARED and limit > 1 then
	return {-1, 0}
elseif kind == 'x' and limit > 1 then
	return {-1, 1}
end

-- --every: a start that the period's run keeps out is refused, whatever
-- holds the name, and no longer waits.  (Not a later attempt of the run
-- that recorded the start: a quorum's, trying again.  A hand-over's grant
-- that the caller finds here, it gives back.)
local every = tonumber(ARGV[18]) or 0
local sched
if every > 0 then
	expect({KEYS[9], 'hash'})
	sched = schedule(KEYS[9])
	if sched and sched.a ~= ARGV[16] and schedule_closed(sched, every,
	    now) then
		if ARGV[11] == '1' then
			redis.call('HDEL', KEYS[5], token)
			redis.call('ZREM', KEYS[6], token)
		end
		return {-2, tonumber(sched.s), sched.h or false,
			sched.i or false, now}
	end
end

-- The caller may not have it now: list it among the waiters (when it will
-- wait) and say who holds it (h) and when to look again (pttl).
local function busy(pttl, h)
	local due = tonumber(ARGV[7])
	if due > 0 then
		-- Its first attempt's time and place, kept: set by the server
		-- when it was listed, never moved (a first attempt that came
		-- late keeps its late place: one that moved earlier on the
		-- next attempt, by the client's count, came before waiters
		-- that the --fifo line had placed before it, and each deferred
		-- to the other for ever).
		redis.call('HSET', KEYS[5], token, cjson.encode({u = now + due,
			s = own and tonumber(own.s) or now,
			o = string.format('%.0f', place), h = ARGV[3],
			p = ARGV[4], n = ARGV[5], c = ARGV[6], k = want}))
		-- Both keys outlive every entry: never shorten them.
		if redis.call('PTTL', KEYS[5]) < due + 10000 then
			redis.call('PEXPIRE', KEYS[5], due + 10000)
		end
		if ARGV[9] == '1' then
			redis.call('ZADD', KEYS[6], place, token)
			if redis.call('PTTL', KEYS[6]) < due + 10000 then
				redis.call('PEXPIRE', KEYS[6], due + 10000)
			end
		end
	end
	return {0, pttl, h[1], h[2], h[3], h[4], now}
end

-- The metadata busy() shows of a holder.
local function shown_holder(info)
	return redis.call('HMGET', info, 'host', 'pid', 'command',
		'acquired_ms')
end
local NOBODY = {false, false, false, false}

-- Does the rule let the caller in?  mine: it holds already.
local mine = kind == 'x' and cur == token
for _, tok in ipairs(live or {}) do
	mine = mine or tok == token
end
if kind == 'x' and not mine then
	return busy(redis.call('PTTL', KEYS[1]), shown_holder(KEYS[3]))
elseif kind == SHARED and want == 's' and not mine and not bare then
	local w = writers(KEYS[5], now, token)
	if #w > 0 then
		return busy(redis.call('PTTL', KEYS[1]),
			shown_holder(KEYS[1] .. ':holder:' .. live[1]))
	end
elseif kind == SHARED and want == 'x' then
	for _, tok in ipairs(live) do
		if tok ~= token then
			-- A reader's upgrade while another's waits: refused.
			-- (Who it is, read before the entry goes: a key of
			-- another type stops the script before any write.)
			local up = mine and upgrader(KEYS[5], now, live, token)
			if up then
				local h = redis.call('HMGET', KEYS[1] ..
					':holder:' .. up, 'host', 'pid')
				if own then
					redis.call('HDEL', KEYS[5], token)
					redis.call('ZREM', KEYS[6], token)
				end
				return {-3, h[1] or false, h[2] or false}
			end
			return busy(redis.call('PTTL', KEYS[1]),
				shown_holder(KEYS[1] .. ':holder:' .. tok))
		end
	end
	-- The caller is the last reader: it upgrades (below).
	mine = false
elseif kind == 'limit' and not mine and #live >= held_limit then
	-- Full: look again when the soonest place ends.
	return busy(ends[1] - now, shown_holder(KEYS[1] .. ':holder:' ..
		live[1]))
elseif not kind and want == 's' and not bare then
	-- Free, but a writer placed before it waits: its turn; wake it by
	-- name.  (Not one placed after: a --fifo writer lets this reader
	-- go first, and each would wait for the other.)
	local w, due = writers(KEYS[5], now, token, place)
	if #w > 0 then
		wake_each(KEYS[4], w)
		return busy(due, NOBODY)
	end
end

-- A --fifo caller lets every waiter that came before it go first.
if ARGV[9] == '1' and not mine and not bare then
	for _, e in ipairs(waiting(KEYS[5], now)) do
		if e.token ~= token and before(e.q, e.token, place, token) then
			if not kind then
				-- Free, but its turn: wake it, and look again
				-- when its place would lapse.
				wake_each(KEYS[4], {e.token})
				return busy(e.u - now, NOBODY)
			end
			return busy(redis.call('PTTL', KEYS[1]), NOBODY)
		end
	end
end

-- Record a new holder (kind: '' plain, 'shared', 'limit:N').  How long
-- it waited is by the server's clock, from its waiter entry when it has
-- one (the waited_ms argument was taken when the request was sent, before
-- its BLPOP).
local function acquired(fence, what)
	if tonumber(ARGV[13]) <= 0 then
		return
	end
	local waited = ARGV[8]
	if own then
		waited = math.max(now - tonumber(own.s), tonumber(waited))
	end
	record_acquired(KEYS[1], ARGV[13], ARGV[14], {ARGV[3], ARGV[4],
		ARGV[5], ARGV[6]}, fence, waited, token, what)
end

-- The hold's hash info: kept (mine: its fence, its acquire time; a
-- hand-over's grant is claimed by this run) or fresh (a new fence).
local upgraded
local function hold(info, what)
	local fence = mine and tonumber(redis.call('HGET', info, 'fence'))
	if fence then
		if redis.call('HGET', info, 'a') == 'g' then
			redis.call('HSET', info, 'a', ARGV[16])
		end
		redis.call('HSET', info, 'host', ARGV[3], 'pid', ARGV[4],
			'user', ARGV[5], 'command', ARGV[6], 'ttl_ms', ttl)
	else
		fence = new_fence(KEYS[2], t, ARGV[15],
			fence_keep(ttl, ARGV[13], ARGV[14]), fence_seen)
		if not (bare and (info == KEYS[3] or fresh)) then
			redis.call('DEL', info)
		end
		acquired(fence, what)
		redis.call('HSET', info, 'token', token, 'fence', fence,
			'acquired_ms', now, 'a', upgraded or ARGV[16],
			'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5],
			'command', ARGV[6], 'ttl_ms', ttl)
	end
	redis.call('PEXPIRE', info, ttl)
	if ARGV[11] == '1' and ARGV[17] ~= '1' then
		redis.call('HDEL', KEYS[5], token)
		redis.call('ZREM', KEYS[6], token)
	end
	return {1, fence, ttl}
end

-- A plain holder that asks --shared keeps its exclusive hold.
if want == 'x' or kind == 'x' then
	if kind == SHARED then
		-- The upgrade: the reader's own hold goes, the plain one comes,
		-- and keeps the run that took the shared hold: a give-back of
		-- this run (a reply lost, -w running out) leaves the reader an
		-- exclusive holder, never a holder of nothing that believes it
		-- reads.
		upgraded = redis.call('HGET', KEYS[1] .. ':holder:' .. token,
			'a')
		redis.call('DEL', KEYS[1], KEYS[1] .. ':holders',
			KEYS[1] .. ':holder:' .. token)
		cur = nil
	end
	-- The period's start, first: a write the server refuses (memory)
	-- then stops the script before the lock is taken.
	if every > 0 and not (sched and sched.a == ARGV[16]) then
		schedule_start(KEYS[9], sched, every, now, {ARGV[3], ARGV[4]},
			token, ARGV[16], ARGV[19] == '1', ARGV[14])
	end
	if cur then
		redis.call('PEXPIRE', KEYS[1], ttl)
	else
		redis.call('SET', KEYS[1], token, 'PX', ttl)
		-- A plain lock's waiters block on the wake list: a fresh
		-- hold starts with it empty.  (With nobody listed, a release
		-- pushed none: one left by waiters gone since costs a waiter
		-- to come an attempt, not this call on every acquire.)
		if not bare then
			redis.call('DEL', KEYS[4])
		end
	end
	return hold(KEYS[3], '')
end
local mark = want == 's' and SHARED or 'limit:' .. limit
local r = hold(KEYS[1] .. ':holder:' .. token, mark)
redis.call('ZADD', KEYS[1] .. ':holders', now + ttl, token)
-- The mark and the set end with the latest holder, exactly (see fit() in
-- lib.lua): the others' latest end (the live ones, just read) or this
-- hold's, whichever is later; one SET, one PEXPIRE.
local last = now + ttl
for i, tok in ipairs(live or {}) do
	if tok ~= token and ends[i] > last then
		last = ends[i]
	end
end
redis.call('SET', KEYS[1], mark, 'PX', last - now)
redis.call('PEXPIRE', KEYS[1] .. ':holders', last - now)
-- Another waiting reader may come in too: pass the wake on.
if want == 's' and not bare and redis.call('EXISTS', KEYS[5]) == 1 then
	wake_one(KEYS[4])
end
return r
