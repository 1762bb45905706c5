-- force: delete the lock whoever holds it and wake one waiter; returns what
-- inspect would have shown just before.  KEYS: lock, info, fence, wake.
-- ARGV: the forcer's host, pid and user, history_len, history_ttl_ms: the
-- history gets 'forced', by whom, and whom it removed (a semaphore's or a
-- shared lock's: how many, and the first).
if redis.replicate_commands then redis.replicate_commands() end
local now = clock()
local cur = redis.call('GET', KEYS[1])

local function forced(h, n)
	record(KEYS[1], ARGV[4], ARGV[5], 'forced', {'bh', ARGV[1], 'bp',
		ARGV[2], 'bu', ARGV[3], 'h', h[1] or '', 'p', h[2] or '', 'u',
		h[3] or '', 'c', h[4] or '', 'f', h[5] or '', 'n', n})
end

if not cur or cur == SHARED or string.match(cur, '^limit:%d+$') then
	-- A semaphore or a shared lock: every holder goes; the reply lists
	-- who they were.
	local s = holders(KEYS[1], now, true)
	if s[2] and #s[2] > 0 then
		local f = s[2][1]
		forced({f[2], f[3], f[4], f[5], f[8]}, #s[2])
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
forced({h[1], h[2], h[3], h[4], h[7]}, 1)
redis.call('DEL', KEYS[1], KEYS[2], KEYS[4])
redis.call('RPUSH', KEYS[4], '1')
redis.call('PEXPIRE', KEYS[4], 10000)
return r
