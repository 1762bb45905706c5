-- acquire: take the lock for a token, if the one rule of lib.lua (see
-- judge()) lets it in beside those who hold it.
-- KEYS (K), ARGV (A) and the replies (R_ACQUIRE_...): src/lua/contract.
-- Its arguments: slack_ms (the lease a caller that will wait is listed
-- for; '0': it will not wait), listed (whether an earlier attempt listed
-- it), history_len and history_ttl_ms (see record() in lib.lua),
-- fence_floor_us (see new_fence()), run (the acquire's run id, the same
-- for each of its attempts), keep_listed ('1': a quorum's attempt, whose
-- waiter entry stays when it wins here, see below), every (exec --every:
-- the period in ms, '0' without), retry ('1': --retry-failed), fired
-- (--every: the server-clock ms of the run's firing; '0' now, '-MS' MS
-- before now),
-- slots (--cron: the expression's times around the client's clock, ms,
-- comma separated; '' without), cron and cron_tz (the expression and its
-- zone, kept in the schedule for status).
-- It answers acquire_held when the token now holds the lock,
-- acquire_busy when it may not (the holder, for a waiter to show; pttl_ms
-- is when to look again), acquire_mix when the name is held in a way this
-- ask cannot mix with (nothing changes), acquire_skipped when --every
-- refuses the start (its slot's run started then, there: see
-- S.refused() in lib.lua), acquire_upgrade when the caller, a
-- reader, asks to upgrade while another reader's upgrade is pending (that
-- reader's host and pid; nothing changes but the caller's own waiter
-- entry, which goes), acquire_superseded when a newer waiter superseded
-- the caller (exec --pending, below: who it was; the caller's mark stays
-- until its give-back).
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
-- Newest waiter wins (pending, exec --pending N: '0' without): a
-- caller that asks with it is listed with it (m), and its first listing
-- (or one after its entry lapsed: it is placed last then) leaves at most
-- N such waiters: the oldest beyond N (in the one order of
-- waiting, holders apart) are superseded.  A superseded waiter's entry
-- becomes a mark of who superseded it (sh, sp: host and pid; u: its lease
-- as it was, so that it lapses as the entry would), which no reader of
-- the waiters takes for a waiter (it has no s), and it is woken on its
-- own list: its next attempt, which the wake sets off at once, finds the
-- mark and is answered acquire_superseded (so is any attempt after it,
-- one sent again after a lost reply too); it runs nothing, and gives
-- back, which takes the mark away.  The history gets 'superseded' (the
-- waiter, and by whom).
-- Waiters that did not ask with --pending are neither counted nor
-- superseded.  The release then hands the lock to a waiter that is left
-- (see hand_over() in lib.lua): with --pending 1, the newest.
-- Replace the holder (replace, exec --replace: '1'): a caller that finds
-- a plain holder that may be replaced (no nr, exec --no-replace: '1'
-- sets it on the caller's own hold) asks it to stop: the holder's record
-- gets qh, qp (the caller's host and pid; the first to ask keeps them),
-- which its next extend answers (extend.lua): its rlock stops its
-- command, releases, and the release hands the lock to the next waiter.
-- The caller waits as any waiter does (it is refused -n).  The history
-- gets 'replaced' (the holder, and by whom) when the request is made.
-- Each hold records the run that took it (a, see lib.lua); a hold handed
-- over by a release (a = 'g') is claimed by its waiter's attempt.
-- A new holder is recorded in the history ('acquired'), and nothing else:
-- nothing of the history is read.  A plain lock taken afresh whose newest
-- event is still its holder's 'acquired' was never released: the readers
-- show that run's 'expired' (see record_acquired() in lib.lua).
--{ early
-- The common acquire first (see "early" in lib.lua): an ask that no
-- earlier attempt listed, on a name whose key is absent, while nobody
-- waits (not asked of a plain ask, which takes a free name whoever waits,
-- as SET NX would): the rule below lets any kind in, and nothing else of
-- it applies.  So it takes the name with nothing read but the key, the
-- waiters' keys, the clock, the fence counter and, for exec --every, the
-- schedule.  And a plain ask that another's plain hold refuses, while
-- nobody waits, is answered busy (below).  Anything else (a fence
-- counter that is not one, a start the schedule refuses, a failed read)
-- returns nothing: the full script below judges it and says what is
-- wrong.  Its first write is the period's
-- start, or the fence's, as below: a server that refuses it (memory, a
-- replica) is answered as there (run()).
-- Each number in the arguments is read once (a string used as a number
-- is read anew each time), and what is sent on is a number's text when
-- there is one: a number in a call is written out again by the server.
if A.listed ~= '1' then
	local limit = A.limit == '1' and 1 or tonumber(A.limit) or 1
	local want = A.shared == '1' and 's' or limit > 1 and 'l:' .. limit or
		'x'
	if redis.replicate_commands then redis.replicate_commands() end
	-- exec --every (a plain ask, in the script's every variant; any
	-- other is left to the full script): a start that the schedule
	-- refuses is answered first,
	-- whatever holds the name, as below (the fleet's other machines, each
	-- period: the schedule read and nothing else); one it allows makes
	-- the period's start the first write, as below.  A damaged schedule,
	-- or a key of another type, is left to the full script, which says so.
	local every = tonumber(A.every)
	local S, sched, now, t, fired, cron
	if every > 0 then
		S = want == 'x' and schedule_lib and schedule_lib()
		sched = S and S.read(K.every)
		if sched == false then
			return
		end
		now, t = clock()
		fired = S.fired(A.fired, now)
		cron = {t = S.pick(A.slots, fired), e = A.cron, tz = A.cron_tz}
		local refused, paused = S.refused(sched, A.run, every, fired, now,
			cron.t)
		if refused then
			return S.skipped(sched, now, paused)
		end
	end
	local held = redis.pcall('EXISTS', K.lock)
	-- A plain ask (no --every, --fifo, --replace or --pending) that
	-- finds the name's one holder plain, live and another's, while
	-- nobody waits: busy, as busy() below answers it (the holder, and
	-- its expiry as when to look again), listed if it will wait (its
	-- entry as there: placed now, the waiters' key just made, so its
	-- expiry is set without asking for it).  A fleet's refused
	-- machines, and each waiter's first attempt, go no further.
	if held == 1 and want == 'x' and every == 0 and A.fifo ~= '1' and
	    A.replace ~= '1' and A.pending == '0' then
		if redis.pcall('EXISTS', K.waiters, K.queue) ~= 0 then
			return
		end
		local all = redis.pcall('HGETALL', K.lock)
		if type(all) ~= 'table' or #all ~= 2 or all[1] == A.token then
			return
		end
		local ok, r = pcall(cjson.decode, all[2])
		if not ok or type(r) ~= 'table' or r.k ~= 'x' or
		    not tonumber(r.f) or not tonumber(r.e) then
			return
		end
		now, t = clock()
		local e = tonumber(r.e)
		if e <= now then
			return
		end
		local due = tonumber(A.slack_ms)
		if due > 0 then
			redis.call('HSET', K.waiters, A.token, cjson.encode({
				u = now + due, s = now,
				o = string.format('%.0f', t[1] * 1000000 + t[2]),
				h = A.host, p = A.pid, n = A.user, c = A.command,
				k = want}))
			redis.call('PEXPIRE', K.waiters, due + 10000)
		end
		return {[R_ACQUIRE_BUSY.code] = 0,
			[R_ACQUIRE_BUSY.pttl_ms] = e - now,
			[R_ACQUIRE_BUSY.host] = r.h or false,
			[R_ACQUIRE_BUSY.pid] = r.p or false,
			[R_ACQUIRE_BUSY.command] = r.c or false,
			[R_ACQUIRE_BUSY.acquired_ms] = r.t or false,
			[R_ACQUIRE_BUSY.now_ms] = now}
	end
	if held ~= 0 or ((want ~= 'x' or A.fifo == '1') and
	    redis.pcall('EXISTS', K.waiters, K.queue) ~= 0) then
		return
	end
	local seen = fence_usable(K.fence)
	if seen == nil then
		return
	end
	local ttl = tonumber(A.ttl_ms)
	local len, hist_ttl = tonumber(A.history_len),
		tonumber(A.history_ttl_ms)
	if not now then
		now, t = clock()
	end
	local rid
	if every > 0 and not (sched and sched.a == A.run) then
		rid = run_id(A.token)
		S.start(K.every, sched, every, now, fired, {A.host, A.pid}, rid,
			A.run, A.retry == '1', cron)
	end
	local fence, text = new_fence(K.fence, t, A.fence_floor_us,
		fence_keep(ttl, len, hist_ttl), seen)
	text = text or fence_text(fence)
	local kept = math.min(ttl, hist_ttl)
	local v = record_acquired(K.lock, len, hist_ttl,
		{A.host, A.pid, A.user, A.command}, text, A.waited_ms, A.token,
		kind_shown(want), kept, rid) and now + kept or nil
	-- (The record as encoded() writes it, made here in one table.)
	redis.call('HSET', K.lock, A.token, cjson.encode({k = want,
		e = now + ttl, f = text, t = now, l = ttl, a = A.run, h = A.host,
		p = A.pid, n = A.user, c = A.command, v = v,
		nr = A.no_replace == '1' and 1 or nil}))
	redis.call('PEXPIRE', K.lock, A.ttl_ms)
	return {[R_ACQUIRE_HELD.code] = 1, [R_ACQUIRE_HELD.fence] = fence,
		[R_ACQUIRE_HELD.ttl_ms] = ttl}
end
-- A hand-over's claim: a plain waiter's attempt (no --every) that finds
-- the name's one record its own, a plain hold that a release handed it
-- (a = 'g') or that this run claimed already (its reply lost), live,
-- while nobody else waits.  As below: the hold is the run's, with the
-- caller's metadata and its TTL from now, its fence kept, the key's
-- expiry its own.  (Its waiter entry and place went with the grant; with
-- nobody waiting there is none to take off.)  Anything else goes on.
if A.every == '0' and A.shared ~= '1' and A.limit == '1' then
	if redis.replicate_commands then redis.replicate_commands() end
	local all = redis.pcall('HGETALL', K.lock)
	if type(all) ~= 'table' or #all ~= 2 or all[1] ~= A.token then
		return
	end
	local ok, r = pcall(cjson.decode, all[2])
	if not ok or type(r) ~= 'table' or r.k ~= 'x' or
	    not (r.a == 'g' or r.a == A.run) or not tonumber(r.e) or
	    not tonumber(r.f) or
	    redis.pcall('EXISTS', K.waiters, K.queue) ~= 0 then
		return
	end
	local now = clock()
	local ttl = tonumber(A.ttl_ms)
	if tonumber(r.e) <= now then
		return
	end
	r.a, r.h, r.p, r.n, r.c = A.run, A.host, A.pid, A.user, A.command
	r.l, r.e = ttl, now + ttl
	r.nr = A.no_replace == '1' and 1 or nil
	redis.call('HSET', K.lock, A.token, encoded(r))
	redis.call('PEXPIRE', K.lock, ttl)
	return {[R_ACQUIRE_HELD.code] = 1, [R_ACQUIRE_HELD.fence] = tonumber(r.f),
		[R_ACQUIRE_HELD.ttl_ms] = ttl}
end
--} early
if redis.replicate_commands then redis.replicate_commands() end
local limit = tonumber(A.limit) or 1
local shared = A.shared == '1'
local token, ttl = A.token, tonumber(A.ttl_ms)
local now, t = clock()
local want = shared and 's' or limit > 1 and 'l:' .. limit or 'x'
local H = hold_read(K.lock, now)
local kind, mine = H.kind, hold_find(H, token)
-- Whether nobody waits: the waiters and the line absent (and so of no
-- other type, before this script writes them).  Not asked of a plain ask
-- on a free name that no earlier attempt listed, nor --fifo: it takes the
-- name whoever waits (as SET NX would), and has no entry to read.
local nobody = true
if kind or want ~= 'x' or A.listed == '1' or A.fifo == '1' then
	nobody = expect_waiting(K.waiters, K.queue)
end
-- The caller's own entry, if an earlier attempt listed it, and its place:
-- the entry's while its lease lasts, else now (it comes after everyone
-- listed: an entry that lapsed was nobody's place meanwhile, and others
-- may have been placed and served before it came back).  Its first
-- attempt's time (s) stays, for how long it has waited.
local own
if not nobody then
	local ok, e = pcall(cjson.decode, redis.call('HGET', K.waiters, token) or
		'')
	if ok and type(e) == 'table' and e.sh then
		-- Superseded by a newer waiter: told by whom.  The mark stays
		-- (until the waiter's give-back takes it, or its lease ends):
		-- an attempt sent again after this reply was lost is told the
		-- same, never listed anew as the newest (the model's P_SUPER).
		redis.call('ZREM', K.queue, token)
		return reply(R_ACQUIRE_SUPERSEDED, {code = -4,
			host = tostring(e.sh), pid = tostring(e.sp or '')})
	end
	if ok and type(e) == 'table' and tonumber(e.s) then
		own = e
	end
end
local place = own and (tonumber(own.u) or 0) > now and place_of(own) or
	t[1] * 1000000 + t[2]

-- Held in a way this ask does not mix with: a usage error, no change.
if kind and kind ~= 'x' and kind ~= 's' and want ~= kind then
	return reply(R_ACQUIRE_MIX, {code = -1, limit = H.limit})
elseif kind == 's' and limit > 1 then
	return reply(R_ACQUIRE_MIX, {code = -1, limit = 0})
elseif kind == 'x' and limit > 1 then
	return reply(R_ACQUIRE_MIX, {code = -1, limit = 1})
end

-- --every: a start that its slot's run keeps out is refused, whatever
-- holds the name, and no longer waits.  (Not a later attempt of the run
-- that recorded the start: a quorum's, or one whose reply was lost,
-- trying again.  A hand-over's grant that the caller finds here, it gives
-- back.)  The caller's slot is the one it fired in: fired, the server's
-- clock when its cron fired, which the client sends again with each
-- later attempt once an answer told it ('0': now, a first attempt; '-MS':
-- MS before now, the --splay it slept first; never later than now).
local every = tonumber(A.every) or 0
local S, sched, fired, cron
if every > 0 then
	S = schedule_lib()
	sched = schedule(K.every)
	fired = S.fired(A.fired, now)
	-- --cron: the expression's time nearest the firing is its slot.
	cron = {t = S.pick(A.slots, fired), e = A.cron, tz = A.cron_tz}
	-- A pause (rlock schedule pause) refuses every start as well,
	-- saying until when (-1: until resumed) and by whom.
	local refused, paused = S.refused(sched, A.run, every, fired, now,
		cron.t)
	if refused then
		if A.listed == '1' then
			redis.call('HDEL', K.waiters, token)
			redis.call('ZREM', K.queue, token)
		end
		return S.skipped(sched, now, paused)
	end
end

-- A first listing with --pending N: the oldest waiters beyond N that
-- asked with --pending, holders apart, are superseded (see the top).
local pending = tonumber(A.pending) or 0
local function supersede(now)
	local list = {}
	for _, e in ipairs(waiting(K.waiters, now)) do
		if e.m and not hold_find(H, e.token) then
			list[#list + 1] = e
		end
	end
	for i = 1, #list - pending do
		local e = list[i]
		if e.token ~= token then
			redis.call('HSET', K.waiters, e.token, cjson.encode({
				sh = A.host, sp = A.pid, u = e.u}))
			redis.call('ZREM', K.queue, e.token)
			record(K.lock, A.history_len, A.history_ttl_ms,
				'superseded', {'h', e.h, 'p', e.p, 'u', e.n,
				'c', e.c, 'r', run_id(e.token), 'bh', A.host,
				'bp', A.pid, 'bu', A.user})
			wake_one(K.wake .. ':' .. e.token)
		end
	end
end

-- The caller may not have it now: list it among the waiters (when it will
-- wait) and say who holds it (h, see who() in lib.lua) and when to look
-- again (pttl).
local function busy(pttl, h)
	local due = tonumber(A.slack_ms)
	if due > 0 then
		-- Its first attempt's time and place, kept: set by the server
		-- when it was listed, never moved (a first attempt that came
		-- late keeps its late place: one that moved earlier on the
		-- next attempt, by the client's count, came before waiters
		-- that the --fifo line had placed before it, and each deferred
		-- to the other for ever).
		redis.call('HSET', K.waiters, token, cjson.encode({u = now + due,
			s = own and tonumber(own.s) or now,
			o = string.format('%.0f', place), h = A.host,
			p = A.pid, n = A.user, c = A.command, k = want,
			m = pending > 0 and pending or nil}))
		-- Both keys outlive every entry: never shorten them.
		if redis.call('PTTL', K.waiters) < due + 10000 then
			redis.call('PEXPIRE', K.waiters, due + 10000)
		end
		if A.fifo == '1' then
			redis.call('ZADD', K.queue, place, token)
			if redis.call('PTTL', K.queue) < due + 10000 then
				redis.call('PEXPIRE', K.queue, due + 10000)
			end
		end
		if pending > 0 and not (own and (tonumber(own.u) or 0) > now) then
			supersede(now)
		end
	end
	return reply(R_ACQUIRE_BUSY, {code = 0, pttl_ms = pttl, host = h[1],
		pid = h[2], command = h[3], acquired_ms = h[4], now_ms = now})
end
local NOBODY = {false, false, false, false}

-- Does the rule let the caller in?
if kind == 'x' and not mine then
	local r = H.live[1]
	if A.replace == '1' and not r.nr and not r.qh then
		r.qh, r.qp = A.host, A.pid
		hold_set(H, r.token, r)
		hold_write(H, now)
		record(K.lock, A.history_len, A.history_ttl_ms, 'replaced',
			{'h', r.h or '', 'p', r.p or '', 'u', r.n or '', 'c',
			r.c or '', 'f', fence_text(r.f), 'r', run_id(r.token),
			'bh', A.host, 'bp', A.pid, 'bu', A.user})
	end
	return busy(H.latest - now, who(r))
elseif kind == 's' and want == 's' and not mine and not nobody then
	local w = writers(K.waiters, now, token)
	if #w > 0 then
		return busy(H.latest - now, who(H.live[1]))
	end
elseif kind == 's' and want == 'x' then
	for _, r in ipairs(H.live) do
		if r.token ~= token then
			-- A reader's upgrade while another's waits: refused.
			-- (Who it is, read before the entry goes.)
			local up = mine and not nobody and upgrader(K.waiters, now,
				hold_tokens(H), token)
			if up then
				local u = hold_find(H, up)
				if own then
					redis.call('HDEL', K.waiters, token)
					redis.call('ZREM', K.queue, token)
				end
				return reply(R_ACQUIRE_UPGRADE, {code = -3,
					host = u.h, pid = u.p})
			end
			return busy(H.latest - now, who(r))
		end
	end
	-- The caller is the last reader: it upgrades (below).
elseif kind and kind ~= 'x' and kind ~= 's' and not mine and
    #H.live >= H.limit then
	-- Full: look again when the soonest place ends.
	return busy(H.live[1].e - now, who(H.live[1]))
elseif not kind and want == 's' and not nobody then
	-- Free, but a writer placed before it waits: its turn; wake it by
	-- name.  (Not one placed after: a --fifo writer lets this reader
	-- go first, and each would wait for the other.)
	local w, due = writers(K.waiters, now, token, place)
	if #w > 0 then
		wake_each(K.wake, w)
		return busy(due, NOBODY)
	end
end

-- A --fifo caller lets every waiter that came before it go first.
if A.fifo == '1' and not mine and not nobody then
	for _, e in ipairs(waiting(K.waiters, now)) do
		if e.token ~= token and before(e.q, e.token, place, token) then
			if not kind then
				-- Free, but its turn: wake it, and look again
				-- when its place would lapse.
				wake_each(K.wake, {e.token})
				return busy(e.u - now, NOBODY)
			end
			return busy(H.latest - now, NOBODY)
		end
	end
end

-- The caller gets it.  The last reader that asks for an exclusive hold
-- upgrades: its reader's record goes, a plain one comes, and keeps the
-- run that took the shared hold (a give-back of this run, a reply lost
-- or -w running out, leaves the reader an exclusive holder, never a
-- holder of nothing that believes it reads).  A plain holder that asks
-- --shared keeps its exclusive hold.
local upgraded
if kind == 's' and want == 'x' then
	upgraded = mine.a
	hold_set(H, token, nil)
	mine, kind = nil, nil
end
local k = kind == 'x' and 'x' or want
-- (A new hold's fence counter is read before the first write: a key that
-- rlock did not write stops the script there.)
local seen = not mine and expect_fence(K.fence)
-- The period's start, first: a write the server refuses (memory) then
-- stops the script before the lock is taken.  (A hand-over's grant that
-- this run claims starts it too; not a later attempt of the run that
-- recorded it: a quorum's, trying again.)
if every > 0 and k == 'x' and not (sched and sched.a == A.run) then
	S.start(K.every, sched, every, now, fired, {A.host, A.pid},
		run_id(token), A.run, A.retry == '1', cron)
end
local fence
if mine then
	-- Its hold again: its fence and acquire time kept; a hand-over's
	-- grant claimed by this run.
	fence = tonumber(mine.f)
	if mine.a == 'g' then
		mine.a = A.run
	end
	mine.h, mine.p, mine.n, mine.c = A.host, A.pid, A.user, A.command
	mine.l, mine.e = ttl, now + ttl
	mine.nr = A.no_replace == '1' and 1 or nil
	hold_set(H, token, mine)
else
	fence = new_fence(K.fence, t, A.fence_floor_us,
		fence_keep(ttl, A.history_len, A.history_ttl_ms), seen)
	-- Recorded in the history: how long it waited is by the server's
	-- clock, from its waiter entry when it has one (the waited_ms
	-- argument was taken when the request was sent, before its BLPOP).
	local waited = A.waited_ms
	if own then
		waited = math.max(now - tonumber(own.s), tonumber(waited))
	end
	local v = record_acquired(K.lock, A.history_len, A.history_ttl_ms,
		{A.host, A.pid, A.user, A.command}, fence, waited, token,
		kind_shown(k), math.min(ttl, tonumber(A.history_ttl_ms))) and
		now + math.min(ttl, tonumber(A.history_ttl_ms)) or nil
	hold_set(H, token, {k = k, e = now + ttl, f = fence, t = now,
		l = ttl, a = upgraded or A.run, h = A.host, p = A.pid,
		n = A.user, c = A.command, v = v,
		nr = A.no_replace == '1' and 1 or nil})
	-- A plain lock's waiters block on the wake list: a fresh hold
	-- starts with it empty.  (With nobody listed, a release pushed
	-- none: one left by waiters gone since costs a waiter to come an
	-- attempt, not this call on every acquire.)
	if k == 'x' and not nobody then
		redis.call('DEL', K.wake)
	end
end
hold_write(H, now)
if A.listed == '1' and A.keep_listed ~= '1' then
	redis.call('HDEL', K.waiters, token)
	redis.call('ZREM', K.queue, token)
end
-- Another waiting reader may come in too: pass the wake on.
if k == 's' and not nobody and redis.call('EXISTS', K.waiters) == 1 then
	wake_one(K.wake)
end
return reply(R_ACQUIRE_HELD, {code = 1, fence = fence, ttl_ms = ttl})
