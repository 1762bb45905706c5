-- sched: rlock schedule's changes to a name's schedule (LOCK:every, see
-- "schedule" in lib.lua), on the server's clock.  KEYS (K) and ARGV (A):
-- src/lua/contract.  op:
--  declare: the period (period_ms) and grace (grace_ms; 0: half the
--    period), its --cron expression and zone ('' for --every), and when
--    it was first declared (kept): a schedule that nothing has started
--    yet is overdue a period and its grace after it;
--  pause: no start of it, from any machine, for for_ms (0: until
--    resumed), by whom (by) and since when kept for status;
--  resume: the pause ends;
--  remove: the schedule goes, with its record.
-- Returns {code, until_ms}: code 1 done, 0 nothing to do (resume of a
-- schedule not paused, remove of none); until_ms, for pause, when it ends
-- (-1: until resumed).
if redis.replicate_commands then redis.replicate_commands() end
local now = clock()
local key = K.every
local op = A.op
-- A schedule whose key or fields rlock did not write is changed by
-- nothing but its removal (the remedy, with release --force): checked
-- before the first write.
if op ~= 'remove' then
	expect({key, 'hash'})
	schedule(key)
end
if op == 'declare' then
	local p, g = tonumber(A.period_ms), tonumber(A.grace_ms) or 0
	if not p or p <= 0 then
		error('RLOCK_FAILED declare needs a period, not ' ..
			shown(tostring(A.period_ms)), 0)
	end
	redis.call('HSET', key, 'p', p)
	if g > 0 then
		redis.call('HSET', key, 'g', g)
	else
		redis.call('HDEL', key, 'g')
	end
	if not redis.call('HGET', key, 'd') then
		redis.call('HSET', key, 'd', now)
	end
	redis.call('HSET', key, 'e', A.cron, 'tz', A.cron_tz)
	schedule_lib().kept(key)
	return reply(R_SCHEDULED, {code = 1, until_ms = 0})
elseif op == 'pause' then
	local ms = tonumber(A.for_ms) or 0
	local z = ms > 0 and now + ms or 'r'
	redis.call('HSET', key, 'z', z, 'zb', A.by, 'zs', now)
	schedule_lib().kept(key)
	return reply(R_SCHEDULED, {code = 1, until_ms = ms > 0 and z or -1})
elseif op == 'resume' then
	local was = redis.call('HGET', key, 'z')
	redis.call('HDEL', key, 'z', 'zb', 'zs')
	return reply(R_SCHEDULED, {code = was and 1 or 0, until_ms = 0})
elseif op == 'remove' then
	return reply(R_SCHEDULED, {code = redis.call('DEL', key), until_ms = 0})
end
error('RLOCK_FAILED unknown op ' .. shown(tostring(op)), 0)
