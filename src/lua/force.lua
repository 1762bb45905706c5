-- force: delete the lock whoever holds it and wake one waiter; returns what
-- inspect would have shown just before.  KEYS: lock, info, fence, wake.
if redis.replicate_commands then redis.replicate_commands() end
-- A semaphore's holders (see acquire.lua): {limit, {{token, host, pid,
-- user, command, acquired_ms, ttl_ms, fence, pttl_ms}, ...}}, or {} for a
-- plain lock.
local function holders(drop)
	local cur = redis.call('GET', KEYS[1])
	local limit = cur and tonumber(string.match(cur, '^limit:(%d+)$'))
	if not limit then
		return {}
	end
	local list = {}
	for i = 1, limit do
		local slot = KEYS[1] .. ':slot:' .. i
		local tok = redis.call('GET', slot)
		if tok then
			local h = redis.call('HMGET', slot .. ':info', 'host', 'pid',
				'user', 'command', 'acquired_ms', 'ttl_ms', 'fence')
			list[#list + 1] = {tok, h[1], h[2], h[3], h[4], h[5], h[6],
				h[7], redis.call('PTTL', slot)}
			if drop then
				redis.call('DEL', slot, slot .. ':info')
			end
		end
	end
	if drop then
		redis.call('DEL', KEYS[1])
	end
	return {limit, list}
end
local t = redis.call('TIME')
local cur = redis.call('GET', KEYS[1])
if not cur or string.match(cur, '^limit:%d+$') then
	-- A semaphore: every slot goes; the reply lists who held them.
	local s = holders(true)
	if s[2] and #s[2] > 0 then
		redis.call('RPUSH', KEYS[4], '1')
		redis.call('PEXPIRE', KEYS[4], 10000)
	end
	return {s[2] and #s[2] > 0 and 1 or 0, -2,
		tonumber(redis.call('GET', KEYS[3])) or 0,
		t[1] * 1000 + math.floor(t[2] / 1000), false, false, false, false,
		false, false, false, false, {}, s}
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
