-- lib: helpers that embed.sh puts in front of every script (each script is
-- sent and hashed with them).  Locals only: Redis forbids globals.

-- ------------------------------------------------------------ early
--{ early
-- A server older than 6.0 (it has no redis.setresp) is refused before
-- anything is done, with its version: the scripts need what came with 6.0.
if not redis.setresp then
	local info = tostring(redis.pcall('INFO', 'server'))
	local v = string.match(info, 'redis_version:([%d.]+)') or '?'
	return redis.error_reply('RLOCK_OLDSERVER ' .. v)
end

-- What a script's fast path (a section of the script between the same
-- marks as this one) needs: embed.awk puts the script's fast path after
-- this section and before the rest of lib.lua, so that the common call
-- returns before the helpers below are made (each call makes them
-- anew: most of a short script's cost on the server).

-- (Defined with the other damage helpers below, for run().)
local damage_of
-- (Defined with the schedule's helpers below: before a fast path only in
-- exec --every's variants of the scripts, see embed.sh; nil in the
-- others' fast paths, which leave --every to the full script.)
local schedule_lib
-- What a script's early fast path read and leaves to its later one (see
-- "later" in embed.awk): nil unless it does.
local passed

-- Run the script's body (embed.awk wraps it as a function): an error
-- becomes one error reply that the client can put in words, without the
-- script's name and line.
local function run(main)
	local ok, r = pcall(main)
	if ok then
		return r
	end
	if type(r) == 'table' then
		r = r.err
	end
	-- (Redis 7 writes an inner command's error as 'user_script:54:
	-- CODE text'; 6.x as '@user_script: 54: -CODE text'.)
	r = string.gsub(tostring(r), '^@?[%w_]+: ?%d+: %-?', '')
	local code = string.match(r, '^(%u+) ')
	if code == 'WRONGTYPE' and KEYS[1] and damage_of then
		-- One of the lock's keys that no check named: which one.
		r = damage_of(KEYS[1], r)
	elseif code and code ~= 'ERR' and code ~= 'WRONGTYPE' then
		-- The server's own state (READONLY, LOADING, OOM, NOPERM...):
		-- as it said it, for the client to act on.
		return redis.error_reply(r)
	elseif string.sub(r, 1, 6) ~= 'RLOCK_' then
		r = 'RLOCK_FAILED ' .. r
	end
	return redis.error_reply(r)
end

-- (What only acquire's fast path needs, and release's, is marked so: see
-- "only" in embed.awk.)
--{ only acquire release_every
-- The server's clock in milliseconds, and TIME's reply, its seconds and
-- microseconds made numbers once (each use of a string as a number reads
-- it anew).
local function clock()
	local t = redis.call('TIME')
	local s, us = t[1] + 0, t[2] + 0
	t[1], t[2] = s, us
	return s * 1000 + (us - us % 1000) / 1000, t
end
--} only
--{ only acquire

-- The next fence from the counter fkey: INCR, but never below the server's
-- clock in microseconds (t: TIME's reply).  A counter lost with the data
-- (a restart without persistence, an AOF that missed the last writes, a
-- failover to a replica that lagged) comes back above every fence handed
-- out before, while the clocks stay roughly in step.
-- proposal (microseconds; 0: none) is the quorum client's floor: the
-- same on every server it asks, and ahead of their clocks, so that they
-- hand out one fence and none needs raising after (see align_fences in
-- lock.c).  It is believed up to two seconds ahead of this server's
-- clock: a fence never runs further ahead of the servers' clocks, which
-- the fallback after a data loss (above) relies on.
-- The same floor lets the counter expire (keep_ms after its last fence:
-- the lock's TTL or the history's, whichever is longer, and FENCE_KEEP_MS
-- more): a counter that has expired starts again at the server's clock,
-- above every fence it handed out, none of which ran more than two
-- seconds ahead of it.  Nothing rlock writes lives for ever.
local FENCE_KEEP_MS = 10000
-- How long a counter must outlive a hold of ms: the history's expiry too,
-- when there is a history (len events of ttl), for the fences it shows.
local function fence_keep(ms, len, ttl)
	if (tonumber(len) or 0) > 0 then
		return math.max(ms, tonumber(ttl) or 0)
	end
	return ms
end
-- Can a fence be taken from the counter fkey?  One that rlock did not
-- write (a string that is not a number, another type) would fail INCR
-- after the script's first writes: a fast path leaves it to the full
-- script, which says what is wrong, and a grant to nobody (the release
-- then wakes the waiters as without a hand-over).  The counter as read
-- (false: absent), for new_fence(), or nil when it cannot.
local function fence_usable(fkey)
	local f = redis.pcall('GET', fkey)
	if type(f) == 'table' or (f and not (#f <= 18 and
	    string.match(f, '^%d+$'))) then
		return nil
	end
	return f or false
end
-- seen: the counter's value as this script read it (expect_fence: false
-- when absent), if nothing has changed it since; nil: not read.  A
-- counter that the floor passes is then set in one call, with its expiry
-- (a SET drops the old one: keep_ms is what it gets either way); the
-- fence is then returned with its text (fence_text's), which the caller
-- passes on as it is (a number is written out again by each call that
-- takes it).
local function new_fence(fkey, t, proposal, keep_ms, seen)
	local floor = t[1] * 1000000 + t[2]
	proposal = proposal ~= '0' and tonumber(proposal) or 0
	if proposal > floor then
		floor = math.min(proposal, floor + 2000000)
	end
	keep_ms = (tonumber(keep_ms) or 0) + FENCE_KEEP_MS
	-- (Exact: both are below 2^53 here; a larger counter takes INCR.
	-- seen is digits, as read: expect_fence.  A whole number below 2^53
	-- is written by %d as by %.0f, for less.)
	if seen == false or (seen and seen + 1 < floor) then
		local text = floor % 1 == 0 and string.format('%d', floor) or
			string.format('%.0f', floor)
		redis.call('SET', fkey, text, 'PX', keep_ms)
		return floor, text
	end
	local fence = redis.call('INCR', fkey)
	if fence < floor then
		fence = floor
		redis.call('SET', fkey, string.format('%.0f', floor))
	end
	if redis.call('PTTL', fkey) < keep_ms then
		redis.call('PEXPIRE', fkey, keep_ms)
	end
	return fence
end
--} only

-- A record as it is kept: its fields, not its token (the field's name).
-- (The fence as a string, its digits all there: cjson and tostring write
-- a number with 14.)
local function fence_text(f)
	return type(f) == 'number' and string.format('%.0f', f) or tostring(f)
end
--{ only acquire
local function encoded(r)
	return cjson.encode({k = r.k, e = r.e, f = fence_text(r.f), t = r.t,
		l = r.l, a = r.a, h = r.h, p = r.p, n = r.n, c = r.c, v = r.v,
		nr = r.nr, qh = r.qh, qp = r.qp})
end
--} only

-- History: the stream LOCK:log, one entry an event, keeping the newest
-- len entries (and at most a node more, below) and expiring ttl_ms after
-- its newest; len 0: none kept.  fields: the entry's field/value pairs
-- after e (the event).
-- Trimmed a node at a time (MAXLEN ~): an exact MAXLEN deletes an entry
-- inside the oldest node on every XADD, after walking the node to it, a
-- fifth of the server's instructions in an exec cycle.  The oldest node
-- goes once len entries are left without it, so the stream holds len
-- plus at most a node's entries (stream-node-max-entries, 100 by
-- default, and stream-node-max-bytes: some 30 of rlock's).  A server
-- whose nodes are unbounded (both 0) never frees one: an exact trim cuts
-- such a stream back to len once it holds STREAM_SLACK more, looked at
-- on one event in STREAM_LOOK (by the entry's millisecond), which costs
-- the others nothing.
local STREAM_SLACK, STREAM_LOOK = 100, 8
-- more_ms: the expiry set reaches that much further (an acquire's, by its
-- hold's TTL: its release, if it comes within that TTL, need not set it
-- again); covered: the server-clock ms until which the expiry already
-- reaches ttl_ms past an event (the record's v, see the top of this
-- file): an event no later leaves the expiry as it is.  Whether the
-- event was written and the expiry set.
local function record(lock, len, ttl, event, fields, more_ms, covered)
	len = tonumber(len) or 0
	if len <= 0 then
		return false
	end
	local key = lock .. ':log'
	-- Best effort, and last: a stream that rlock did not write (another
	-- type, an entry ID it cannot follow) loses the event, not the script.
	local id = redis.pcall('XADD', key, 'MAXLEN', '~', len, '*', 'e',
		event, unpack(fields))
	if type(id) ~= 'string' then
		return false
	end
	-- (Digits: made a number by the arithmetic, which reads them once.)
	local ms = string.match(id, '^(%d+)-')
	ms = ms and ms + 0 or 0
	if not (tonumber(covered) and ms <= tonumber(covered)) and
	    type(redis.pcall('PEXPIRE', key, tonumber(ttl) +
	    (tonumber(more_ms) or 0))) ~= 'number' then
		return false
	end
	if ms % STREAM_LOOK == 0 then
		local n = redis.pcall('XLEN', key)
		if type(n) == 'number' and n > len + STREAM_SLACK then
			redis.pcall('XTRIM', key, 'MAXLEN', len)
		end
	end
	return true
end

-- A run's id in the history: its token, hashed (tokens are never shown).
local function run_id(token)
	return string.sub(redis.sha1hex(token), 1, 12)
end

--{ only acquire
-- Record a new holder in the history (kind: '' plain, 'shared', 'limit:N';
-- who: {host, pid, user, command}).  Only what happened is written.  A
-- plain holder that was never released and expired has no event of its
-- own: the readers (log, watch, history.c) show it, just before the next
-- 'acquired', wherever a plain hold's 'acquired' (or its 'leftovers',
-- said before the release) is directly followed by another 'acquired'.
-- A hand-over's 'acquired' follows the release it comes from, and so
-- never implies one.  Nothing of the history is read here: an acquire's
-- look-up of the newest event was a call on the common path, for an event
-- that the stream implies anyway.
-- The history's expiry then reaches hold_ms past ttl: whether it was
-- written so (the record's v is then its time plus hold_ms).  rid: the
-- token's run_id(), when the caller has it already.
local function record_acquired(lock, len, ttl, who, fence, waited, token,
    kind, hold_ms, rid)
	if (tonumber(len) or 0) <= 0 then
		return false
	end
	return record(lock, len, ttl, 'acquired', {'h', who[1], 'p', who[2],
		'u', who[3], 'c', who[4], 'f', fence, 'w', waited, 'r',
		rid or run_id(token), 'k', kind}, hold_ms)
end
--} only

--{ only release
-- A kind's limit: 1 for a plain hold ('x'), 0 for a reader's ('s'), N
-- for --limit N's ('l:N'); nil for a kind rlock does not write.  A limit
-- outside 1 to LIMIT_MAX (--limit's own bound) is damage, never a count
-- to loop to.
local LIMIT_MAX = 10000
local function limit_of(k)
	if k == 'x' then
		return 1
	elseif k == 's' then
		return 0
	end
	local n = type(k) == 'string' and
		tonumber(string.match(k, '^l:(%d%d?%d?%d?%d?)$'))
	if n and n >= 1 and n <= LIMIT_MAX then
		return n
	end
	return nil
end
--} only

-- How the history names a kind: '' plain, 'shared', 'limit:N'.
local function kind_shown(k)
	if k == 'x' then
		return ''
	elseif k == 's' then
		return 'shared'
	end
	return 'limit:' .. string.sub(k, 3)
end

--{ only release
-- The history's 'released' of r, the record of a hold that ended with
-- outcome x (how long it was held: from its acquire time t to the event's
-- own); its expiry set unless the acquire's already reaches past this
-- event (v).  rid: the token's run_id().
local function record_released(lock, len, ttl, r, x, rid)
	return record(lock, len, ttl, 'released', {'h', r.h or '', 'p',
		r.p or '', 'u', r.n or '', 'c', r.c or '', 'f', fence_text(r.f),
		't', r.t or '', 'x', x, 'r', rid, 'k', kind_shown(r.k)}, 0, r.v)
end
--} only

--{ only acquire_every release_every
-- ------------------------------------------------------------ schedule
-- exec --every PERIOD: at most one start of a name a slot, judged on the
-- server's clock.  The slots are a grid of the period, placed so that the
-- fleet's firings fall in the middle of their slot, never at its edge:
-- the first start is its slot's middle (its centre, c), and each later
-- slot's centre is a period further.  A firing belongs to the slot whose
-- centre is nearest to it (a waiter: the time of its first attempt,
-- whenever it is granted, see acquire.lua); each slot gets one start, or,
-- with --retry-failed, one successful run.  A start after a slot or more
-- that nobody started places the grid anew around itself (a fleet whose
-- crontab changed, or that was down); so does one whose server's clock
-- has gone back by more than a slot since the last start (a start left
-- ahead of the clock would otherwise refuse every start for that long).
-- The hash LOCK:every keeps the name's schedule: its period (p, ms), the
-- centre of its last started slot (c: server-clock ms), its last start
-- (s: server-clock ms; h, i: host and pid; r: the run's id, see run_id();
-- a: the acquire run that took it), how that run ended (x: '' while it
-- runs, else its release's outcome, 'exit:0' for a success, or 'lost'),
-- and f = '1' when only a success counts (--retry-failed); and the start
-- before it (o: those nine fields' values, in that order, as one JSON
-- list of strings; '' or absent: none), which a give-back of the run that
-- recorded it restores (a quorum's run that won too few servers started
-- nothing).  (One field, not nine: a hash's fields are found by a walk
-- through it, and a start writes each of its fields.)
-- What a person set and the runs' record, kept across starts (a start
-- rewrites only the fields above; the key has no expiry: a schedule lives
-- until rlock schedule remove): its grace (g, ms; absent: half the
-- period), when it was declared (d, ms; rlock schedule declare), its
-- pause (z: until when, ms, or 'r' until resumed; zb: by whom; zs:
-- since when), its last success (ok, ms: a release with 'exit:0') and its
-- failed runs in a row (nf: releases with another outcome, and starts
-- that found the run before them never released).  A schedule of --cron
-- also keeps its expression (e) and time zone (tz, '' the machines'),
-- for status to show it and its next due time: its slots are the
-- expression's times, which the client works out (see slot_pick()).
-- The helpers are made by the first call that needs them, schedule_lib(),
-- which only exec --every's variants of acquire and release (see embed.sh)
-- define before their fast paths: defined there, it cost every common
-- call some 2,000 instructions.
local schedule_helpers
function schedule_lib()
	if schedule_helpers then
		return schedule_helpers
	end
	local S = {read = false, centre = false, pick = false, fired = false,
		counted = false, paused = false, refused = false, skipped = false,
		kept = false, start = false, ended = false, undo = false}
	-- The fields of a start, in the order of the start before (o).
	local function fields_of(e)
		return {e.p or '', e.s or '', e.h or '', e.i or '', e.r or '',
			e.a or '', e.x or '', e.f or '', e.c or ''}
	end

	-- What each field of a schedule may hold: a period (p, g:
	-- milliseconds, not 0), a time (server-clock ms) or a count, a pause
	-- ('r' or a time), a flag ('1' or ''), a crontab expression (five
	-- fields, or one @name), a time zone's name and the start before (o).
	-- Anything else is damage (see damaged()), found before a script
	-- writes: a number read as 0, a pause read as none or an expression
	-- status cannot step through would lose a start, a pause or an alert
	-- in silence.  (Who started or paused it, the run and its outcome are
	-- words, shown escaped: any bytes do.)  bad(k, v): nil when field k
	-- may hold v, else the words for what it should hold.  (Tests, not
	-- tables: a table is built anew on each call, a test's words are the
	-- script's constants.)
	local function bad(k, v)
		local digits = v == '' or (string.match(v, '^%d+$') and #v <= 15)
		if k == 'p' or k == 'g' then
			if v == '' or not digits or tonumber(v) <= 0 then
				return 'a period in milliseconds'
			end
		elseif k == 's' or k == 'c' or k == 'd' or k == 'zs' or
		    k == 'ok' then
			return not digits and 'a time in milliseconds' or nil
		elseif k == 'nf' or k == 'i' then
			return not digits and 'a count' or nil
		elseif k == 'z' then
			return not (digits or v == 'r') and
				'a time in milliseconds or "r"' or nil
		elseif k == 'f' then
			return not (v == '' or v == '1') and '"1" or nothing' or nil
		elseif k == 'e' then
			local n, at = 0, string.match(v, '^%s*@(%a+)%s*$')
			if at then
				n = string.find(' yearly annually monthly weekly ' ..
					'daily midnight hourly ', ' ' .. at .. ' ', 1,
					true) and 5 or 0
			elseif #v <= 1000 and string.match(v, '^[%w%*,/%-%s]*$') then
				for _ in string.gmatch(v, '%S+') do
					n = n + 1
				end
			end
			return not (v == '' or n == 5) and 'a crontab expression' or
				nil
		elseif k == 'tz' then
			-- A name under the zone files, never a path of its own.
			if #v > 200 or not string.match(v, '^[%w_+%-/]*$') or
			    string.sub(v, 1, 1) == '/' or
			    string.find(v, '..', 1, true) then
				return 'a time zone' .. string.char(39) .. 's name'
			end
		elseif k == 'o' and v ~= '' then
			local ok, o = pcall(cjson.decode, v)
			local n = ok and type(o) == 'table' and #o or 0
			local e = n == 9 and {p = o[1], s = o[2], h = o[3], i = o[4],
				r = o[5], a = o[6], x = o[7], f = o[8], c = o[9]}
			for _, f in ipairs(e and fields_of(e) or {}) do
				if type(f) ~= 'string' then
					e = nil
				end
			end
			if not e or (e.p ~= '' and bad('p', e.p)) or bad('s', e.s) or
			    bad('i', e.i) or bad('f', e.f) or bad('c', e.c) then
				return 'the start before it (9 fields in a JSON list)'
			end
		end
		return nil
	end

	-- The schedule of key, as a table of its fields, or nil; false and
	-- what is wrong: a field that holds what rlock never writes (the
	-- field, its value and the words for what it should hold, see bad()),
	-- or the server's error reply (a key of another type).  (Its fields
	-- as the hash holds them: one walk through it, and what another
	-- program added is not looked at.)  With names (a list of fields),
	-- only those are read.
	function S.read(key, names)
		local all = names and redis.pcall('HMGET', key, unpack(names)) or
			redis.pcall('HGETALL', key)
		if all.err then
			return false, all
		end
		local e, any = {}, false
		for i = 1, #(names or all), names and 1 or 2 do
			local k, v
			if names then
				k, v = names[i], all[i]
			else
				k, v = all[i], all[i + 1]
			end
			if v then
				local words = bad(k, v)
				if words then
					return false, k, v, words
				end
				e[k], any = v, true
			end
		end
		return any and e or nil
	end

	-- The centre of e's last started slot (a schedule written before
	-- the slots: its last start).
	function S.centre(e)
		return tonumber(e.c) or tonumber(e.s)
	end

	-- --cron: the slot time of a firing at fired, among slots (the
	-- client's list of the expression's times around its own clock, in
	-- ms, comma separated): the nearest to fired (the earlier of two as
	-- near); nil without a list.
	function S.pick(slots, fired)
		local best
		for v in string.gmatch(slots or '', '%d+') do
			v = tonumber(v)
			if not best or math.abs(fired - v) <
			    math.abs(fired - best) then
				best = v
			end
		end
		return best
	end

	-- A firing's time (server-clock ms) from acquire's fired argument
	-- ('0': now; '-MS': MS before now; never later than now).
	function S.fired(arg, now)
		local fired = tonumber(arg) or 0
		if fired < 0 then
			fired = now + fired
		elseif fired == 0 then
			fired = now
		end
		return math.min(fired, now)
	end

	-- The slot of a firing at fired, counted from e's last started slot,
	-- for a period of p ms (or, with --cron, of the slot time t): 0 that
	-- slot, 1 a later one (with p: how many later), -1 one before...;
	-- nil when there is no start to count from, or the server's clock
	-- (now) has gone back more than a slot behind the last start.
	local function slot_of(e, p, fired, now, t)
		local c, s = e and S.centre(e), e and tonumber(e.s)
		p = tonumber(p)
		if not c or not p or p <= 0 or (s and now < s - p) then
			return nil
		end
		if t then
			return t > c and 1 or t == c and 0 or -1
		end
		return math.floor((fired - c + p / 2) / p)
	end

	-- Does the run that started e's last slot count for it: always, or
	-- only a success when only a success counts (while such a run goes
	-- on, the lock itself keeps others out; once it failed or was lost,
	-- the slot is open again)?
	function S.counted(e)
		return e.f ~= '1' or e.x == 'exit:0'
	end

	-- Is e paused at now: until when (ms, or 'r' until resumed), else
	-- nil.
	function S.paused(e, now)
		local z = e and e.z
		if z == 'r' or (tonumber(z) and tonumber(z) > now) then
			return z
		end
		return nil
	end

	-- Is a start of the acquire run refused, by e, for a firing at
	-- fired (server-clock ms), of a name run every p ms (t: --cron's
	-- slot time): paused (S.paused's answer, second), or its slot's run
	-- (or a later slot's) started?  Never for a later attempt of the
	-- run that recorded the start (a quorum's, or one whose reply was
	-- lost, trying again).
	function S.refused(e, run, p, fired, now, t)
		if not e or e.a == run then
			return false
		end
		local z = S.paused(e, now)
		if z then
			return true, z
		end
		local n = slot_of(e, p, fired, now, t)
		return n ~= nil and n < 1 and (n < 0 or S.counted(e))
	end

	-- acquire's reply to a start that e refuses (now: the server's
	-- clock; z: S.refused's pause, if it is paused): who started the
	-- slot's run, and when; or until when it is paused (-1: until
	-- resumed), and by whom.
	function S.skipped(e, now, z)
		return {[R_ACQUIRE_SKIPPED.code] = -2,
			[R_ACQUIRE_SKIPPED.started_ms] = tonumber(e.s) or 0,
			[R_ACQUIRE_SKIPPED.host] = e.h or false,
			[R_ACQUIRE_SKIPPED.pid] = e.i or false,
			[R_ACQUIRE_SKIPPED.now_ms] = now,
			[R_ACQUIRE_SKIPPED.paused_until_ms] = z and
				(tonumber(z) or -1) or 0,
			[R_ACQUIRE_SKIPPED.paused_by] = z and e.zb or ''}
	end

	-- A schedule lives until removed: one that an earlier build wrote
	-- with an expiry is written again without it (the commands the
	-- scripts already call: no grant more for an ACL user).
	function S.kept(key)
		if redis.call('PTTL', key) >= 0 then
			local all = redis.call('HGETALL', key)
			redis.call('DEL', key)
			if #all > 0 then
				redis.call('HSET', key, unpack(all))
			end
		end
	end

	-- Record a start at now, of a firing at fired, in key (e: the
	-- schedule until now), in its slot: the next of the grid (or the
	-- grid placed anew around fired), or --cron's time cron.t (cron: {t,
	-- e, tz}, see acquire.lua).  who: {host, pid}; rid: the run's id
	-- (run_id()), run: the acquire run.  Only what differs from an
	-- absent field is written to a new schedule.
	function S.start(key, e, p, now, fired, who, rid, run, retry, cron)
		local n, c = slot_of(e, p, fired, now, cron.t), fired
		if cron.t then
			c = cron.t
		elseif n == 0 or n == 1 then
			c = S.centre(e) + n * p
		end
		local f = {'p', p, 's', now, 'h', who[1], 'i', who[2], 'r', rid,
			'a', run, 'x', '', 'c', string.format('%.0f', c)}
		if retry or e then
			f[#f + 1] = 'f'
			f[#f + 1] = retry and '1' or ''
		end
		if e then
			-- The start before, or none.
			local o = (e.s or '') ~= '' and cjson.encode(fields_of(e)) or
				''
			f[#f + 1] = 'o'
			f[#f + 1] = o
		end
		-- Its expression, or none (a schedule of --every).
		if e or (cron.e or '') ~= '' then
			f[#f + 1] = 'e'
			f[#f + 1] = cron.e or ''
			f[#f + 1] = 'tz'
			f[#f + 1] = cron.tz or ''
		end
		-- The run before, never released (it died without a word): a
		-- failure in the row.
		if e and tonumber(e.s) and (e.x or '') == '' then
			f[#f + 1] = 'nf'
			f[#f + 1] = (tonumber(e.nf) or 0) + 1
		end
		redis.call('HSET', key, unpack(f))
	end

	-- The outcome x of the run that started e, written at its release
	-- (now: the server's clock), with the runs' record: a success's
	-- time, or one more failure in a row.
	function S.ended(key, e, x, now)
		if x == 'exit:0' then
			redis.call('HSET', key, 'x', x, 'ok', now, 'nf', 0)
		else
			redis.call('HSET', key, 'x', x, 'nf',
				(tonumber(e.nf) or 0) + 1)
		end
		e.x = x
	end

	-- A give-back of the run that recorded the start: the start before
	-- it comes back (or none).
	function S.undo(key, e)
		local f, o = {'o'}, (e.o or '') ~= '' and cjson.decode(e.o)
		if not o then
			-- No start before it: its fields go, what a person set
			-- stays (a declared schedule's period with it: still
			-- overdue).
			for _, k in ipairs({'s', 'h', 'i', 'r', 'a', 'x', 'f', 'c',
			    not e.d and 'p' or nil}) do
				f[#f + 1] = k
			end
			redis.call('HDEL', key, unpack(f))
			return
		end
		f[2] = ''
		for j, k in ipairs({'p', 's', 'h', 'i', 'r', 'a', 'x', 'f', 'c'}) do
			f[#f + 1] = k
			f[#f + 1] = o[j]
		end
		redis.call('HSET', key, unpack(f))
	end

	schedule_helpers = S
	return S
end
--} only
--} early

-- ------------------------------------------------------------ later
--{ later
-- What a script's later fast path needs (see "later" in embed.awk): made
-- only by a call that its early fast path did not answer, with the
-- early blocks that fast path did not need (release's hand-over: the
-- fence's and the history's helpers).  The rest of lib.lua, after it,
-- is the full scripts'.
-- A waiter's place in the one order of waiting: the server-clock
-- microsecond of its first attempt (o, see acquire.lua), which it keeps
-- while it is listed; an entry written before places were kept, by its s.
-- The --fifo line, a reader's deference to a writer, an upgrade and the
-- hand-over all read this one order, so that no two waiters can each
-- come before the other.  (o is kept as a string: cjson writes a number
-- with 14 digits.)
local function place_of(e)
	return tonumber(e.o) or (tonumber(e.s) or 0) * 1000
end

-- Does place qa of token ta come before place qb of token tb?  (The
-- token breaks a tie: one script's microsecond.)
local function before(qa, ta, qb, tb)
	return qa < qb or (qa == qb and ta < tb)
end

-- A release's work on the waiters is bounded whatever their hash holds:
-- it reads the first WAITERS_READ entries (rlock's waiters are far
-- fewer).
local WAITERS_READ = 1000

-- How long a grant to waiter e lasts before its own attempt extends it:
-- what is left of its lease, and never more than a minute, whatever an
-- entry that rlock did not write says.
local function grant_ms(e, now)
	return math.max(1, math.min(e.u - now, 60000))
end

-- Push a wake onto list (it expires soon).  Best effort: a list that
-- rlock did not write costs its waiters a wake, not the script.
local function wake_one(list)
	if type(redis.pcall('RPUSH', list, '1')) == 'number' then
		redis.call('PEXPIRE', list, 10000)
	end
end

-- A waiter's kind, from its entry: 'x' exclusive, 's' shared, 'l:N'.
local function kind_of(e)
	if type(e.k) == 'string' then
		return e.k
	end
	return e.x == 1 and 'x' or 's'
end
--} later

-- Who holds a name: one record for every mode.  The key LOCK is a hash
-- with a field for each holder, named by its token, whose value is the
-- holder's record (JSON, see encoded()): its kind (k: 'x' exclusive,
-- 's' a reader of --shared, 'l:N' one of --limit N), its end (e: the
-- server-clock millisecond at which its hold ends), its fence (f), its
-- acquire time (t) and TTL (l), the run that took it (a: the acquire's
-- run id, or 'g' for one a release handed over and its waiter has not
-- yet claimed, so that a run that fails or gives up gives back only what
-- it took, see release.lua), who it is (h host, p pid, n user, c
-- command), and the time until which the history's expiry already covers
-- its release (v, see record()); a plain hold also nr = 1 when its holder
-- may not be replaced (exec --no-replace), and qh, qp (host and pid) once
-- a newcomer asked it to stop (exec --replace, see acquire.lua), which
-- its next extend answers (extend.lua).  What is held is judged from the live
-- records alone (e > now, all of one kind: see hold_read()); one piece
-- of code writes them back (hold_write()), which drops those that have
-- ended and sets the key's expiry at the latest live end, so that nothing
-- outlives its holders.  A plain lock is one record whose end is the
-- key's: as SET NX PX's textbook lock, a key that exists is held.

-- Every key: a script declares in KEYS every key of the lock it reads or
-- writes that has a fixed name, the history (LOCK:log) included, even
-- those that do not exist.  The keys whose names come from the data (a
-- waiter's own wake list, a settled release's mark) cannot be:
-- so the scripts that change a lock (acquire, release, extend, force) also
-- declare LOCK:none, a key that is never written.  While the lock's slot
-- migrates, a key declared and absent makes the server refuse the script
-- with TRYAGAIN (or ASK, then TRYAGAIN on the importing node), and the
-- client sends it again (redis.c) until the move has ended: such a script
-- never runs on half-moved data, where the lock key not yet moved would
-- read as absent on the importing node (two holders), a fence counter
-- as absent (a fence going backwards), or a history written there would
-- stop the move.  A move of a slot takes milliseconds; one left half done
-- (a reshard that died) stops the lock's writes until it is fixed
-- (redis-cli --cluster fix), in words, never in silence.  Read-only
-- scripts (inspect, log) follow ASK as usual.

-- ------------------------------------------------------------ damage
-- Redis does not undo a script that fails half-way, so each script
-- makes all of its writes or none: what can fail (a key of another type,
-- a value that must be a number) is checked before the first write, and
-- the history and the wake lists, written last, are best effort.  What
-- rlock did not write stops a script with 'RLOCK_DAMAGED what', which
-- the client puts in words (redis.c), never a raw error.
local function damaged(what)
	error('RLOCK_DAMAGED ' .. what, 0)
end

-- What key holds: 'none', 'string', 'hash', ...
local function type_of(key)
	local t = redis.call('TYPE', key)
	return type(t) == 'table' and t.ok or t
end

-- Each key of list ({key, type, ...}) absent or holding its type.
-- Whether they were all absent: then one EXISTS asked it of two keys or
-- more, not a TYPE each (a script's calls are most of its cost on the
-- server, and the common lock has no waiters nor line).
local function expect(list)
	if #list >= 4 then
		local keys = {}
		for i = 1, #list, 2 do
			keys[#keys + 1] = list[i]
		end
		if redis.call('EXISTS', unpack(keys)) == 0 then
			return true
		end
	end
	for i = 1, #list, 2 do
		local t = type_of(list[i])
		if t ~= 'none' and t ~= list[i + 1] then
			damaged(list[i] .. ' holds a ' .. t .. ', not a ' ..
				list[i + 1])
		end
	end
	return false
end

-- A value fit to quote in a message: short, and its bytes as Lua shows
-- them (%q), so that nothing in it reaches a terminal raw.
local function shown(v)
	-- (No backslash in these scripts: they are embedded in C as text.)
	local bs, odd = string.char(92),
		'[%c' .. string.char(128) .. '-' .. string.char(255) .. ']'
	return (string.gsub(string.format('%q', string.sub(v, 1, 40)), odd,
		function(c)
			return bs .. string.format('%03d', string.byte(c))
		end))
end

-- A reply of the contract's shape (R_NAME: its fields' places) from v, its
-- fields by name: a field v lacks is false (nil would end the list).
local function reply(shape, v)
	local r = {}
	for name, i in pairs(shape) do
		if v[name] == nil then
			r[i] = false
		else
			r[i] = v[name]
		end
	end
	return r
end

-- The fence counter fkey is absent or a whole number that INCR takes:
-- its value (false: absent), which new_fence() can build on.  (Its type
-- is asked only when GET fails.)
local function expect_fence(fkey)
	local f = redis.pcall('GET', fkey)
	if type(f) == 'table' then
		expect({fkey, 'string'})
		error(f)
	end
	if f and not (string.match(f, '^%d+$') and #f <= 18) then
		damaged(fkey .. ' holds ' .. shown(f) .. ', not a fence number')
	end
	return f
end

-- The records of lock from HGETALL's reply all: each decoded, with its
-- token, or damage (a field that rlock did not write costs the lock, in
-- words: see damaged()).
local function records(lock, all)
	local list = {}
	for i = 1, #all, 2 do
		local ok, r = pcall(cjson.decode, all[i + 1])
		if not ok or type(r) ~= 'table' or not tonumber(r.e) or
		    not limit_of(r.k) or not tonumber(r.f) then
			damaged(lock .. ' holds ' .. shown(all[i + 1]) ..
				' for a holder, not a holder' .. string.char(39) .. 's record')
		end
		r.token, r.e = all[i], tonumber(r.e)
		list[#list + 1] = r
	end
	return list
end

-- The waiters hash and the --fifo line are absent or of their types:
-- whether both are absent (nobody waits).
local function expect_waiting(waiters, queue)
	return expect({waiters, 'hash', queue, 'zset'})
end

-- What is wrong with lock's keys, as 'RLOCK_DAMAGED what' (see damaged()),
-- when a read of them failed with err; else err as a failure.  (Damage
-- a check already named, a schedule's field say, is err itself.)
function damage_of(lock, err)
	if type(err) == 'string' and string.sub(err, 1, 14) ==
	    'RLOCK_DAMAGED ' then
		return err
	end
	local ok, why = pcall(function()
		expect({lock, 'hash', lock .. ':waiters', 'hash',
			lock .. ':queue', 'zset', lock .. ':log', 'stream',
			lock .. ':every', 'hash'})
		expect_fence(lock .. ':fence')
		records(lock, redis.call('HGETALL', lock))
	end)
	if not ok then
		if type(why) == 'table' then
			why = why.err
		end
		why = tostring(why)
		if string.sub(why, 1, 6) == 'RLOCK_' then
			return why
		end
		return 'RLOCK_FAILED ' .. why
	end
	if type(err) == 'table' then
		err = err.err
	end
	return 'RLOCK_FAILED ' .. string.gsub(tostring(err),
		'^@?[%w_]+: ?%d+: %-?', '')
end

-- ------------------------------------------------------------ holders
-- The one place where what holds a name is read, decided and written
-- (see the top of this file).

-- The holders of lock, read for a script to judge and change: H, with
-- H.live the live records (soonest end first), H.kind their kind (nil:
-- the name is free), H.limit its limit (see limit_of), H.latest the
-- latest live end (the key's expiry), H.dead the tokens of records that
-- have ended.  now nil: the key holds one record at most, and is judged
-- without the clock (the key expires with its one record: it exists, so
-- the record is live); with more, the clock is read (H.now).  Live
-- holders of two kinds are damage.
local function hold_read(lock, now)
	local all = redis.call('HGETALL', lock)
	if not now and #all > 2 then
		now = clock()
	end
	local H = {lock = lock, live = {}, dead = {}, now = now, put = {},
		latest = 0}
	for _, r in ipairs(records(lock, all)) do
		if not now or r.e > now then
			H.live[#H.live + 1] = r
			H.latest = math.max(H.latest, r.e)
		else
			H.dead[#H.dead + 1] = r.token
		end
	end
	table.sort(H.live, function(a, b)
		return a.e < b.e or (a.e == b.e and a.token < b.token)
	end)
	H.kind = H.live[1] and H.live[1].k
	for _, r in ipairs(H.live) do
		if r.k ~= H.kind then
			damaged(lock .. ' holds holders of two kinds, ' ..
				shown(H.kind) .. ' and ' .. shown(r.k))
		end
	end
	H.limit = H.kind and limit_of(H.kind)
	return H
end

-- Only a server that takes writes may say that a token holds nothing: a
-- master demoted under its holder (a failover, a REPLICAOF) has its copy
-- flushed for the sync with the new master, which may still have the
-- lock, and a replica's word is no witness of a loss (an exec would stop
-- its command for a lock it still has).  DEL of the key that is never
-- written (none) is a write: a replica refuses it, READONLY, which
-- reaches the client as the server's own state (see run()).
local function writable(none)
	redis.call('DEL', none)
end

-- The live record of token in H, or nil.
local function hold_find(H, token)
	for _, r in ipairs(H.live) do
		if r.token == token then
			return r
		end
	end
	return nil
end

-- The tokens of H's live holders.
local function hold_tokens(H)
	local list = {}
	for i, r in ipairs(H.live) do
		list[i] = r.token
	end
	return list
end

-- Put record r (new, or changed) among H's live holders, or take token's
-- away (r nil); hold_write() writes what changed.
local function hold_set(H, token, r)
	for i, o in ipairs(H.live) do
		if o.token == token then
			table.remove(H.live, i)
			break
		end
	end
	if r then
		r.token = token
		H.live[#H.live + 1] = r
	else
		H.dead[#H.dead + 1] = token
	end
	H.put[token] = r or false
	H.kind = H.live[1] and H.live[1].k
	H.limit = H.kind and limit_of(H.kind)
end

-- Write back what H's changes left (see hold_set): the records put, the
-- ended and taken away ones gone, and the key's expiry at the latest live
-- end (the key gone with its last holder).  Whether anyone still holds
-- it.
local function hold_write(H, now)
	local latest, dels, sets = 0, {}, {}
	for _, r in ipairs(H.live) do
		latest = math.max(latest, r.e)
		if H.put[r.token] then
			sets[#sets + 1] = r.token
			sets[#sets + 1] = encoded(r)
		end
	end
	if latest <= now then
		redis.call('DEL', H.lock)
		H.live, H.latest = {}, 0
		return false
	end
	for _, tok in ipairs(H.dead) do
		dels[#dels + 1] = tok
	end
	if #dels > 0 then
		redis.call('HDEL', H.lock, unpack(dels))
	end
	if #sets > 0 then
		redis.call('HSET', H.lock, unpack(sets))
	end
	if latest ~= H.latest or H.latest == 0 then
		redis.call('PEXPIRE', H.lock, latest - now)
	end
	table.sort(H.live, function(a, b)
		return a.e < b.e or (a.e == b.e and a.token < b.token)
	end)
	H.latest, H.dead, H.put = latest, {}, {}
	return true
end

-- What a waiter is shown of holder r: {host, pid, command, acquired_ms}.
local function who(r)
	return {r.h or false, r.p or false, r.c or false, r.t or false}
end

-- The exclusive waiters listed in the waiters hash whose entries have not
-- lapsed (but not the caller, except), and, with place set, only those
-- placed before the caller's place: their tokens, and the soonest lapse
-- from now.
local function writers(waiters, now, except, place)
	local w, due, all = {}, nil, redis.call('HGETALL', waiters)
	for i = 1, #all, 2 do
		local ok, e = pcall(cjson.decode, all[i + 1])
		if ok and type(e) == 'table' and (e.k == 'x' or e.x == 1) and
		    all[i] ~= except and (tonumber(e.u) or 0) >= now and
		    (not place or before(place_of(e), all[i], place,
		    except)) then
			w[#w + 1] = all[i]
			if not due or e.u - now < due then
				due = e.u - now
			end
		end
	end
	return w, due
end

-- Wake each of tokens on its own list (wake:TOKEN), which it blocks on
-- besides the lock's.
local function wake_each(wake, tokens)
	for _, tok in ipairs(tokens) do
		wake_one(wake .. ':' .. tok)
	end
end

-- H's live holders, as status shows several: {limit, {{token, host, pid,
-- user, command, acquired_ms, ttl_ms, fence, pttl_ms}, ...}}, limit 0 for
-- a shared lock; {} for a plain one or a free name.
local function holder_list(H, now)
	if not H.kind or H.kind == 'x' then
		return {}
	end
	local list = {}
	for _, r in ipairs(H.live) do
		list[#list + 1] = reply(R_HOLDER, {token = r.token, host = r.h,
			pid = r.p, user = r.n, command = r.c, acquired_ms = r.t,
			ttl_ms = r.l, fence = fence_text(r.f), pttl_ms = r.e - now})
	end
	return reply(R_HOLDERS, {limit = H.limit, list = list})
end

-- ------------------------------------------------------------ schedule
-- (The schedule's helpers: schedule_lib(), above.)
-- The schedule of key, as a table of its fields, or nil: damage (see
-- schedule_lib().read) stops the script, saying what is wrong.
local function schedule(key)
	local e, k, v, words = schedule_lib().read(key)
	if e == false and type(k) == 'table' then
		error(k)
	elseif e == false then
		damaged(key .. ' holds ' .. shown(v) .. ' in ' .. k .. ', not ' ..
			words)
	end
	return e
end

-- ------------------------------------------------------------ hand-over
-- When a release frees room (a plain lock, the last reader, a semaphore's
-- place) and someone waits, the release's own script gives it to the next.
-- Readers and writers take turns (phase-fair): a writer's release lets
-- in every waiting reader together, if any waits, and the last reader's
-- release the oldest waiting writer, if any waits; otherwise a name left
-- free goes to the oldest waiter (their first attempt, by the server's
-- clock), with every waiting reader if it reads, or with those asking
-- the same --limit N right behind it in the line, up to N.  A
-- semaphore's place freed while others still hold goes to the oldest
-- waiter if it asks with the same --limit.  So a writer waits at most one
-- reader phase, a reader at most one writer, writers go in the order they
-- came, the releaser cannot barge back in ahead of them, and neither a
-- crowd of readers nor a stream of writers (--fifo or not) starves the
-- other kind.  The grant lasts
-- what is left of the waiter's lease (see acquire.lua), marked as not yet
-- claimed (a = 'g'): the waiter's next attempt, which its wake (its own
-- list) sets off at once, finds it holds the lock and extends it to its
-- own TTL; a waiter that died meanwhile keeps it no longer than its lease.
-- hist: {len, ttl}.

-- The live entries of the waiters hash, decoded, in the one order of
-- waiting (see place_of): of the first WAITERS_READ of them (see above).
local function waiting(waiters, now)
	local all, list = redis.call('HGETALL', waiters), {}
	for i = 1, math.min(#all, 2 * WAITERS_READ), 2 do
		local ok, e = pcall(cjson.decode, all[i + 1])
		if ok and type(e) == 'table' and (tonumber(e.u) or 0) > now and
		    tonumber(e.s) then
			-- As numbers and strings, whatever a stray writer put.
			list[#list + 1] = {token = all[i], u = tonumber(e.u),
				s = tonumber(e.s), q = place_of(e),
				k = kind_of(e), m = tonumber(e.m),
				h = tostring(e.h or ''), p = tostring(e.p or ''),
				n = tostring(e.n or ''), c = tostring(e.c or '')}
		end
	end
	table.sort(list, function(a, b)
		return before(a.q, a.token, b.q, b.token)
	end)
	return list
end

-- The upgrade under way among a shared lock's live holders (tokens live):
-- the first of them, but not except, that waits listed as an exclusive
-- waiter (a reader asking for an exclusive hold with its token), or nil.
-- Two such upgrades would each wait for the other to stop reading: while
-- one is pending, a second is refused at once (acquire.lua), and the
-- pending one is woken when the last other reader leaves (release.lua).
local function upgrader(waiters, now, live, except)
	local reads = {}
	for _, tok in ipairs(live) do
		reads[tok] = true
	end
	for _, e in ipairs(waiting(waiters, now)) do
		if e.k == 'x' and reads[e.token] and e.token ~= except then
			return e.token
		end
	end
	return nil
end

-- Let waiters (list) in as holders of kind k, together, with H the
-- lock's holders: each a record of its own, marked as not yet claimed
-- (a = 'g'), a fence each, an 'acquired' each in the history, and each
-- woken on its own list, its entry and place gone.
-- (The fences first: INCR is the one call that a key rlock did not
-- write can fail, and then the script stops before the lock is touched.)
-- seen: the fence counter as fence_usable() read it (false: absent), so
-- that the first fence is one SET when the clock's floor has passed the
-- counter, as it has after any wait (new_fence()).
local function grant(hist, H, list, k, now, t, seen)
	local fences = {}
	for i, e in ipairs(list) do
		fences[i] = new_fence(K.fence, t, 0,
			fence_keep(grant_ms(e, now), hist[1], hist[2]),
			i == 1 and seen or nil)
	end
	for i, e in ipairs(list) do
		local lease = grant_ms(e, now)
		hold_set(H, e.token, {k = k, e = now + lease, f = fences[i],
			t = now, l = lease, a = 'g', h = e.h, p = e.p, n = e.n,
			c = e.c})
	end
	hold_write(H, now)
	for i, e in ipairs(list) do
		record_acquired(K.lock, hist[1], hist[2], {e.h, e.p, e.n, e.c},
			fences[i], now - e.s, e.token, kind_shown(k))
		redis.call('HDEL', K.waiters, e.token)
		redis.call('ZREM', K.queue, e.token)
	end
	for _, e in ipairs(list) do
		wake_one(K.wake .. ':' .. e.token)
	end
end

-- Hand the room a release just freed to whoever's turn it is (see above);
-- H: the lock's holders as the release left them; was: the kind of the
-- hold that ended ('x', 's', or 'l:N').  Whether anyone got it.
local function hand_over(hist, H, was)
	-- Nobody waits (the common release): nothing more to read.
	if redis.call('EXISTS', K.waiters) == 0 then
		return false
	end
	local seen = fence_usable(K.fence)
	if seen == nil then
		return false
	end
	local now, t = clock()
	local list = waiting(K.waiters, now)
	if #list == 0 then
		return false
	end
	local live = {}
	for _, r in ipairs(H.live) do
		if r.e > now then
			live[#live + 1] = r
		end
	end
	local kind = live[1] and live[1].k
	local first = list[1]
	-- The other kind's turn, when it waits.
	local turn = was == 'x' and 's' or was == 's' and 'x' or nil
	for _, e in ipairs(list) do
		if e.k == turn then
			first = e
			break
		end
	end
	local want, room = first.k, 0
	if kind and kind ~= 'x' and kind ~= 's' then
		want, room = kind, limit_of(kind) - #live
	elseif kind then
		-- Still held (readers left): nobody's turn yet.
		return false
	elseif want == 'x' then
		grant(hist, H, {first}, 'x', now, t, seen)
		return true
	elseif want == 's' then
		room = #list
	else
		room = limit_of(want) or 0
	end
	-- Every waiting reader; or, with --limit N, the oldest and those
	-- asking the same right behind it, up to the room: nobody is passed
	-- over by one who came later.
	local batch = {}
	for _, e in ipairs(list) do
		if #batch >= room or (want ~= 's' and e.k ~= want) then
			break
		end
		if e.k == want then
			batch[#batch + 1] = e
		end
	end
	if #batch == 0 then
		return false
	end
	grant(hist, H, batch, want, now, t, seen)
	return true
end
