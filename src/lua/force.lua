-- force: delete the lock whoever holds it and wake one waiter; returns what
-- inspect would have shown just before.  KEYS: lock, info, fence, wake.
if redis.replicate_commands then redis.replicate_commands() end
local now = clock()
local cur = redis.call('GET', KEYS[1])
if not cur or cur == SHARED or string.match(cur, '^limit:%d+$') then
	-- A semaphore or a shared lock: every holder goes; the reply lists
	-- who they were.
	local s = holders(KEYS[1], now, true)
	if s[2] and #s[2] > 0 then
		redis.call('RPUSH', KEYS[4], '1')
		redis.call('PEXPIRE', KEYS[4], 10000)
	end
	return {s[2] and #s[2] > 0 and 1 or 0, -2,
		tonumber(redis.call('GET', KEYS[3])) or 0, now, false, false,
		false, false, false, false, false, false, {}, s}
end
local r = {1, redis.call('PTTL', KEYS[1]),
	tonumber(redis.call('GET', KEYS[3])) or 0, now}
local h = redis.call('HMGET', KEYS[2], 'host', 'pid', 'user', 'command',
	'acquired_ms', 'ttl_ms', 'fence')
for i = 1, 7 do r[4 + i] = h[i] end
r[12] = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4])
redis.call('RPUSH', KEYS[4], '1')
redis.call('PEXPIRE', KEYS[4], 10000)
return r
