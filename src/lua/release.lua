-- release: end the token's hold, if it has one, and give the room to the
-- next waiter or wake one.  KEYS: lock, info, wake, waiters, fence, queue,
-- log, none, every.  ARGV: token, outcome (exec's "exit:N", "signal:NAME" or
-- "max-runtime", "release" for the release command, "" for a give-back),
-- history_len, history_ttl_ms, the caller's host, pid and user,
-- hand_over ('1': one server; see hand_over() in lib.lua: with several,
-- each would choose on its own), run ('' for a release; else a give-back
-- of that acquire run), keep_listed ('1': a quorum's give-back between two
-- attempts of the run, which keeps its waiter entry), settling ('1': a
-- release sent again after one whose reply was lost, which, finding the
-- hold gone, records no loss: the first one, late, may have ended it),
-- every ('1': the run may have a schedule to end or take back, an exec
-- --every's, or one this release cannot know of: rlock release, which a
-- dead exec's guard runs; '0': none, and the schedule is not read).
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
-- while the period's run keeps others out, nobody is handed the lock: the
-- waiters are woken, to be refused and go.
-- Under memory pressure (maxmemory reached, noeviction) the server
-- refuses a script's writes that need memory until it has written
-- something: the deletions come first, and the history after them.
local token = ARGV[1]
local K = {KEYS[1], KEYS[2], KEYS[5], KEYS[3], KEYS[4], KEYS[6]}
local hist = {ARGV[3], ARGV[4]}
local direct = ARGV[8] == '1'
local run = ARGV[9] or ''
local now = clock()
local cur = redis.call('GET', KEYS[1])
-- What this script may write, checked before it writes (see lib.lua):
-- when somebody waits, the waiters, the line and the holders' set (a
-- hand-over may let readers in); nobody in the common release, which
-- asks one EXISTS.  The hold's hash and the schedule are read first
-- instead, before any write, and a marked lock's set is first written by
-- judge()'s prune: a key of another type stops the script there (run()).
-- (A hand-over's grant deletes the hash it writes first.)
local limit = limit_of(KEYS[1], cur)
local nobody = redis.call('EXISTS', KEYS[4], KEYS[6]) == 0
if not nobody then
	expect({KEYS[4], 'hash', KEYS[6], 'zset', KEYS[1] .. ':holders',
		'zset'})
end
-- The schedule's start, if it is this run's to end (a release: the
-- token's, still running) or to take back (a give-back: the run's).
local sched = ARGV[12] == '1' and schedule(KEYS[9])
if sched and not ((run ~= '' and sched.a == run) or (run == '' and
    sched.r == run_id(token) and sched.x == '')) then
	sched = nil
end
-- The hold's metadata: the history's 'released', and the run that took
-- it (a).  (HMGET: a user that may not HGET can still give back.)
local FIELDS = {'host', 'pid', 'user', 'command', 'fence', 'acquired_ms',
	'a'}
local h
if cur == token then
	h = redis.call('HMGET', KEYS[2], unpack(FIELDS))
elseif cur == SHARED or limit then
	h = redis.call('HMGET', KEYS[1] .. ':holder:' .. token,
		unpack(FIELDS))
end
local kind, _, live, ends = judge(KEYS[1], cur, now, true)

-- The hash of the token's hold, if it has one; a marked lock's other live
-- holders, the latest end among them, and the token's own end.
local info, others, latest, mine_end = nil, {}, now, now
if kind == 'x' and cur == token then
	info = KEYS[2]
elseif kind == SHARED or kind == 'limit' then
	for i, tok in ipairs(live) do
		if tok == token then
			info = KEYS[1] .. ':holder:' .. token
			mine_end = ends[i]
		else
			others[#others + 1] = tok
			latest = math.max(latest, ends[i])
		end
	end
end
-- A give-back leaves what the run did not take.  (A hold that names no
-- run was left by an acquire that stopped half-way, a command the server
-- refused it after its first write: the run giving back is that one.)
if info and run ~= '' and h[7] and h[7] ~= run and h[7] ~= 'g' then
	info = nil
end
-- The caller's entry and place go, unless it will try again (quorum).
if not nobody and not (run ~= '' and ARGV[10] == '1') then
	redis.call('HDEL', KEYS[4], token)
	redis.call('ZREM', KEYS[6], token)
end

-- The run's start in the schedule: taken back (a give-back), or ended
-- (a release sent again after a lost reply that finds the hold gone says
-- nothing: the first, late, may have ended it; a start left running
-- whose lock is gone is taken for a failed run anyway).
if sched and run ~= '' then
	schedule_undo(KEYS[9], sched)
	sched = nil
elseif sched and ARGV[2] ~= '' and (info or ARGV[11] ~= '1') then
	redis.call('HSET', KEYS[9], 'x', info and ARGV[2] or 'lost')
	sched.x = info and ARGV[2] or 'lost'
end

local function settled()
	return KEYS[1] .. ':settled:' .. run_id(token)
end
if not info then
	if ARGV[2] ~= '' and run == '' and ARGV[11] ~= '1' and
	    tonumber(ARGV[3]) > 0 and
	    redis.call('DEL', settled()) == 0 then
		record(KEYS[1], ARGV[3], ARGV[4], 'lost', {'h', ARGV[5], 'p',
			ARGV[6], 'u', ARGV[7], 'x', ARGV[2], 'y',
			"gone or another's at release", 'r', run_id(token)})
	end
	return 0
end

-- The history's 'released', read before the hash goes.
local ev
if tonumber(ARGV[3]) > 0 then
	local since = tonumber(h[6])
	ev = {'h', h[1] or '', 'p', h[2] or '', 'u', h[3] or '', 'c',
		h[4] or '', 'f', h[5] or '', 'd', since and now - since or '',
		'x', ARGV[2], 'r', run_id(token), 'k', kind == 'x' and '' or cur}
end
if kind == 'x' then
	redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
else
	-- The mark and the set end with the latest holder left, exactly
	-- (see fit() in lib.lua): sooner, if this hold's end was the
	-- latest; none left, they go.
	if #others == 0 then
		redis.call('DEL', KEYS[1], KEYS[1] .. ':holders', info)
	else
		redis.call('ZREM', KEYS[1] .. ':holders', token)
		redis.call('DEL', info)
		if mine_end > latest then
			redis.call('PEXPIRE', KEYS[1], latest - now)
			redis.call('PEXPIRE', KEYS[1] .. ':holders',
				latest - now)
		end
	end
end
if ev then
	record(KEYS[1], ARGV[3], ARGV[4], 'released', ev)
	-- (Best effort, like the history: after the deletions.)
	if ARGV[11] == '1' then
		redis.pcall('SET', settled(), '1', 'PX', tonumber(ARGV[4]))
	end
end
-- Readers left: nobody else can get in yet, but a reader waiting to
-- upgrade that is now the only one left can: woken (its own list).
if kind == SHARED and #others > 0 then
	if #others == 1 and not nobody and upgrader(KEYS[4], now, others) then
		wake_each(KEYS[3], others)
	end
	return 1
end
-- The period's run counted: whoever waits for it with --every is refused.
if sched and schedule_closed(sched, sched.p, now) then
	if not nobody then
		local tokens = {}
		for _, e in ipairs(waiting(KEYS[4], now)) do
			tokens[#tokens + 1] = e.token
		end
		wake_each(KEYS[3], tokens)
		wake_one(KEYS[3])
	end
	return 1
end
if direct and not nobody and hand_over(K, hist, kind == 'x' and 'x' or
    cur) then
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
if kind == SHARED then
	wake_each(KEYS[3], writers(KEYS[4], now, token))
end
wake_one(KEYS[3])
return 1
