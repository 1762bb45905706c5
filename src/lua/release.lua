-- release: end the token's hold, if it has one, and give the room to the
-- next waiter or wake one.  KEYS (K) and ARGV (A): src/lua/contract.
-- Its arguments: outcome (exec's "exit:N", "signal:NAME" or
-- "max-runtime", "release" for the release command, "" for a give-back),
-- the caller's host, pid and user, hand_over ('1': one server; see
-- hand_over() in lib.lua: with several, each would choose on its own),
-- run ('' for a release; else a give-back of that acquire run),
-- keep_listed ('1': a quorum's give-back between two attempts of the run,
-- which keeps its waiter entry), settling ('1': a release sent again
-- after one whose reply was lost, which, finding the hold gone, records
-- no loss: the first one, late, may have ended it), every ('1': the run
-- may have a schedule to end or take back, an exec --every's, or one this
-- release cannot know of: rlock release, which a dead exec's guard runs;
-- '0': none, and the schedule is not read), ended ('1': the command ended
-- while the hold was surely its own, and the hold is gone since: its
-- outcome is the run's, in the schedule too).
-- Returns 1 when a hold ended, else 0.
-- The other way round, the settling copy ends the hold and the first,
-- late, finds it gone (another may hold it by then): that copy must not
-- record a loss either.  So a settling copy that ends a hold, with a
-- history kept, leaves LOCK:settled:RUN (RUN: run_id(token)), and a
-- release that finds the hold gone while it exists takes it (DEL) instead
-- of recording 'lost'.  Taken once: there is one first copy; a token used
-- again (acquire --token) whose later hold is lost is told so in the
-- history, unless its release is the one to find the mark of a first copy
-- that never came.  Only those two rare paths touch it: the common release
-- writes and reads nothing more.  It lives as long as the history
-- (history_ttl_ms), where the 'lost' it keeps out would stay: how late a
-- request whose client has given up can still reach the server is nothing
-- the client can bound (a proxy holding it, a closed connection's data
-- still retransmitted), and the history is as far as rlock remembers a
-- run.  Its name comes from data, like a holder's hash (see "Every key"
-- in lib.lua: KEYS[8], 'none').  SET and DEL take a key of any type, so
-- nothing in it can stop a script (no damage to report); release --force
-- leaves it, as it leaves the history it serves.
-- A release ends the token's hold whatever took it, and its waiter entry
-- and place in the line.  A give-back (a run that failed, gave up, or
-- must try again) ends only what that run took: a hold whose a is the run
-- (see lib.lua), or one a release handed over and nobody claimed (a =
-- 'g'), which goes to the next; a hold the token had before the run (a
-- reader asking to upgrade, a re-acquire with --token) stays.
-- The wake list holds at most one element and expires soon: a waiter that
-- checked the lock just before the release finds it when it blocks.
-- The history gets 'released' (how long it was held, the outcome), or,
-- when the token no longer holds it and an outcome is given, 'lost'.
-- A run of exec --every writes how it ended into the name's schedule
-- (see lib.lua), or, as a give-back, takes back the start it recorded;
-- once the slot's run counts, nobody is handed the lock: the waiters are
-- woken, to be judged by their own slots.
-- Under memory pressure (maxmemory reached, noeviction) the server
-- refuses a script's writes that need memory until it has written
-- something: the deletions come first, and the history after them.
--{ early
-- The common release first (see "early" in lib.lua): a release (not a
-- give-back) of the name's one holder, the token's, while nobody waits:
-- its key goes (a plain lock's wake list with it), the run's start in
-- the schedule, if it has one, is ended, and 'released' is recorded, as
-- below (nothing else of the rule applies: with nobody waiting, nobody is
-- woken).  Anything else returns nothing, for the full script below,
-- which reads all again: nothing is written before the last read here.
-- A hand-over's release takes a fast path too ("later", below).
if A.run == '' then
	local all = redis.pcall('HGETALL', K.lock)
	if type(all) ~= 'table' or #all ~= 2 or all[1] ~= A.token then
		return
	end
	local ok, r = pcall(cjson.decode, all[2])
	if not ok or type(r) ~= 'table' or not limit_of(r.k) or
	    not tonumber(r.e) or not tonumber(r.f) then
		return
	end
	local listed = redis.pcall('EXISTS', K.waiters, K.queue)
	if listed ~= 0 then
		-- Somebody waits: a hand-over's, perhaps (the later fast path).
		passed = (listed == 1 or listed == 2) and r or nil
		return
	end
	local S, sched, rid
	if A.every == '1' then
		-- (Only in the script's every variant: see embed.sh.)
		if not schedule_lib then
			return
		end
		S, rid = schedule_lib(), run_id(A.token)
		sched = S.read(K.every, {'r', 'x', 'nf'})
		if sched == false then
			return
		elseif sched and not (sched.r == rid and sched.x == '') then
			sched = nil
		end
	end
	if r.k == 'x' then
		redis.call('DEL', K.lock, K.wake)
	else
		redis.call('DEL', K.lock)
	end
	if sched and A.outcome ~= '' then
		S.ended(K.every, sched, A.outcome, clock())
	end
	local len = tonumber(A.history_len)
	if len > 0 then
		record_released(K.lock, len, A.history_ttl_ms, r, A.outcome,
			rid or run_id(A.token))
		if A.settling == '1' then
			redis.pcall('SET', K.lock .. ':settled:' .. run_id(A.token),
				'1', 'PX', tonumber(A.history_ttl_ms))
		end
	end
	return 1
end
--} early
--{ later
-- A hand-over's release (see "later" in embed.awk): the release, with
-- one server (hand_over), sent once, of the name's one hold, the token's
-- and plain (passed: its record, which the early fast path read), of a
-- name without a schedule, while only exclusive waiters wait and the
-- releaser is not among them: the rule below hands the lock to the first
-- of them in the one order, as hand_over() and grant() in lib.lua do
-- (with the commands the full script calls: no grant more for an ACL
-- user).
-- Every read first; the writes then in the full script's order.
-- Anything else (a key of another type or a fence counter that is not
-- one among it too) is the full script's.
local r = passed
if not r or r.k ~= 'x' or A.hand_over ~= '1' or A.settling == '1' or
    (A.every == '1' and redis.pcall('EXISTS', K.every) ~= 0) then
	return
end
local list = redis.pcall('HGETALL', K.waiters)
local line = redis.pcall('TYPE', K.queue)
if type(list) ~= 'table' or #list == 0 or
    #list > 2 * WAITERS_READ or type(line) ~= 'table' or
    not (line.ok == 'zset' or line.ok == 'none') then
	return
end
local seen = fence_usable(K.fence)
if seen == nil then
	return
end
local now, t = clock()
local first
for i = 1, #list, 2 do
	local pok, e = pcall(cjson.decode, list[i + 1])
	if list[i] == A.token then
		return
	end
	if pok and type(e) == 'table' and
	    (tonumber(e.u) or 0) > now and tonumber(e.s) then
		if kind_of(e) ~= 'x' then
			return
		end
		e.token, e.q = list[i], place_of(e)
		if not first or before(e.q, e.token, first.q,
		    first.token) then
			first = e
		end
	end
end
if not first then
	return
end
local len = tonumber(A.history_len)
-- (The releaser's place in the line, if a stray one is left, goes as in
-- the full script; its waiter entry there is none, as read above.)
redis.call('ZREM', K.queue, A.token)
redis.call('DEL', K.lock, K.wake)
if len > 0 then
	record_released(K.lock, len, A.history_ttl_ms, r, A.outcome,
		run_id(A.token))
end
local e, s = first, tonumber(first.s)
e.u = tonumber(e.u)
local lease = grant_ms(e, now)
local fence = new_fence(K.fence, t, 0, fence_keep(lease, len,
	A.history_ttl_ms), seen)
local who = {tostring(e.h or ''), tostring(e.p or ''),
	tostring(e.n or ''), tostring(e.c or '')}
redis.call('HSET', K.lock, e.token, encoded({k = 'x',
	e = now + lease, f = fence, t = now, l = lease, a = 'g',
	h = who[1], p = who[2], n = who[3], c = who[4]}))
redis.call('PEXPIRE', K.lock, lease)
record_acquired(K.lock, len, A.history_ttl_ms, who, fence,
	now - s, e.token, '')
redis.call('HDEL', K.waiters, e.token)
redis.call('ZREM', K.queue, e.token)
wake_one(K.wake .. ':' .. e.token)
return 1
--} later
local token = A.token
local hist = {A.history_len, A.history_ttl_ms}
local direct = A.hand_over == '1'
local run = A.run or ''
-- The holders, read first: a key of another type stops the script
-- before any write (run()).  A lone record is judged without the clock
-- (see hold_read() in lib.lua): the common release asks no TIME.
local H = hold_read(K.lock, nil)
local now = H.now
local function clock_now()
	now = now or clock()
	return now
end
-- What this script may write, checked before it writes (see lib.lua):
-- when somebody waits, the waiters and the line; nobody in the common
-- release, which asks one EXISTS.
local nobody = expect_waiting(K.waiters, K.queue)
-- The schedule's start, if it is this run's to end (a release: the
-- token's, still running) or to take back (a give-back: the run's).
local S = A.every == '1' and schedule_lib()
local sched = S and schedule(K.every)
if sched and not ((run ~= '' and sched.a == run) or (run == '' and
    sched.r == run_id(token) and sched.x == '')) then
	sched = nil
end
-- The token's hold, if it has one.  A give-back leaves what the run did
-- not take.  (A hold that names no run was left by an acquire that
-- stopped half-way, a command the server refused it after its first
-- write: the run giving back is that one.)
local kind = H.kind
local mine = hold_find(H, token)
if mine and run ~= '' and mine.a and mine.a ~= run and mine.a ~= 'g' then
	mine = nil
end
-- The caller's entry and place go, unless it will try again (quorum).
if not nobody and not (run ~= '' and A.keep_listed == '1') then
	redis.call('HDEL', K.waiters, token)
	redis.call('ZREM', K.queue, token)
end

-- The run's start in the schedule: taken back (a give-back), or ended
-- (a release sent again after a lost reply that finds the hold gone says
-- nothing: the first, late, may have ended it; a start left running
-- whose lock is gone is taken for a failed run anyway).  Written after
-- the hold's deletions (below): on a full server, a write that needs
-- memory is refused only before the script's first, and the lock is
-- freed whatever the schedule costs.
local function end_schedule()
	if sched and run ~= '' then
		S.undo(K.every, sched)
		sched = nil
	elseif sched and A.outcome ~= '' and (mine or A.settling ~= '1' or
	    A.ended == '1') then
		local x = (mine or A.ended == '1') and A.outcome or 'lost'
		S.ended(K.every, sched, x, clock_now())
	end
end

local function settled()
	return K.lock .. ':settled:' .. run_id(token)
end
if not mine then
	end_schedule()
	if A.outcome ~= '' and run == '' and A.settling ~= '1' and
	    tonumber(A.history_len) > 0 and
	    redis.call('DEL', settled()) == 0 then
		record(K.lock, A.history_len, A.history_ttl_ms, 'lost', {'h', A.host, 'p',
			A.pid, 'u', A.user, 'x', A.outcome, 'y',
			"gone or another's at release", 'r', run_id(token)})
	end
	writable(K.none)
	return 0
end

-- The hold ends: the last holder's key goes (a plain lock's wake list
-- with it); others' records stay, the key's expiry at the latest of
-- them.
local others = #H.live - 1
if others == 0 then
	if kind == 'x' then
		redis.call('DEL', K.lock, K.wake)
	else
		redis.call('DEL', K.lock)
	end
	-- (Gone, and its expiry with it: a grant below sets one anew.)
	H.live, H.latest = {}, 0
else
	hold_set(H, token, nil)
	hold_write(H, clock_now())
end
end_schedule()
-- The history's 'released', after the deletions.
if tonumber(A.history_len) > 0 then
	record_released(K.lock, A.history_len, A.history_ttl_ms, mine,
		A.outcome, run_id(token))
	-- (Best effort, like the history: after the deletions.)
	if A.settling == '1' then
		redis.pcall('SET', settled(), '1', 'PX', tonumber(A.history_ttl_ms))
	end
end
-- Readers left: nobody else can get in yet, but a reader waiting to
-- upgrade that is now the only one left can: woken (its own list).
if kind == 's' and others > 0 then
	if others == 1 and not nobody and upgrader(K.waiters, clock_now(),
	    hold_tokens(H)) then
		wake_each(K.wake, hold_tokens(H))
	end
	return 1
end
-- The slot's run counted: nobody is handed the lock; the waiters are
-- woken, and each is judged by the slot it fired in (acquire.lua): those
-- of this slot are refused, one of a later slot takes it.
if sched and S.counted(sched) then
	if not nobody then
		local tokens = {}
		for _, e in ipairs(waiting(K.waiters, clock_now())) do
			tokens[#tokens + 1] = e.token
		end
		wake_each(K.wake, tokens)
		wake_one(K.wake)
	end
	return 1
end
if direct and not nobody and hand_over(hist, H, kind) then
	return 1
end
-- Nobody was handed it: wake whoever may now get in (the writers waiting
-- for the last reader by name, and one on the common list).  With nobody
-- listed, nobody waits: a caller that will wait is listed by the attempt
-- that finds the lock taken, in the same script (acquire.lua), so a
-- waiter that blocks after this release was listed before it; one not
-- listed (its attempt lost on the way) looks again within its BLPOP's
-- bound (WAITER_RENEW_MS in lock.c).
if nobody then
	return 1
end
if kind == 's' then
	wake_each(K.wake, writers(K.waiters, clock_now(), token))
end
wake_one(K.wake)
return 1
