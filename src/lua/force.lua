-- force: delete the lock whoever holds it and wake one waiter; returns what
-- inspect would have shown just before.  KEYS: lock, info, fence, wake.
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
if redis.call('EXISTS', KEYS[1]) == 0 then
	return {0, -2, tonumber(redis.call('GET', KEYS[3])) or 0,
		t[1] * 1000 + math.floor(t[2] / 1000)}
end
local r = {1, redis.call('PTTL', KEYS[1]),
	tonumber(redis.call('GET', KEYS[3])) or 0,
	t[1] * 1000 + math.floor(t[2] / 1000)}
local h = redis.call('HMGET', KEYS[2], 'host', 'pid', 'user', 'command',
	'acquired_ms', 'ttl_ms', 'fence')
for i = 1, 7 do r[4 + i] = h[i] end
r[12] = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4])
redis.call('RPUSH', KEYS[4], '1')
redis.call('PEXPIRE', KEYS[4], 10000)
return r
