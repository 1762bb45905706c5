-- extend: push the expiry out to ttl_ms from now if the token holds the lock.
-- KEYS: lock, info.  ARGV: token, ttl_ms (0: the TTL it was acquired with),
-- fallback_ttl_ms.  Returns {1, fence, ttl_ms} or {0}.  A semaphore's
-- holder (see acquire.lua) extends its own slot, and the mark with it; a
-- reader (see lib.lua) its place among the readers, and the mark.
local key, info, mark, rk = KEYS[1], KEYS[2], nil, nil
local cur = redis.call('GET', key)
-- What this script may write, checked before it writes (see lib.lua).
local limit = limit_of(KEYS[1], cur)
if cur == SHARED then
	expect({KEYS[1] .. ':readers', 'zset',
		KEYS[1] .. ':reader:' .. ARGV[1], 'hash'})
	local now = clock()
	rk = KEYS[1] .. ':readers'
	redis.call('ZREMRANGEBYSCORE', rk, '-inf', now)
	if not redis.call('ZRANK', rk, ARGV[1]) then
		return {0}
	end
	key, info, mark = nil, KEYS[1] .. ':reader:' .. ARGV[1], KEYS[1]
elseif cur ~= ARGV[1] then
	key = nil
	for i = 1, limit or 0 do
		local slot = KEYS[1] .. ':slot:' .. i
		if redis.call('GET', slot) == ARGV[1] then
			key, info, mark = slot, slot .. ':info', KEYS[1]
			break
		end
	end
	if not key then
		return {0}
	end
end
expect({info, 'hash'})
-- The TTL it was taken with, if the hash says one that rlock could have
-- written (a whole number of milliseconds, up to a year); else the
-- fallback.
local ttl = tonumber(ARGV[2])
if ttl <= 0 then
	local was = redis.call('HGET', info, 'ttl_ms')
	ttl = was and string.match(was, '^%d+$') and tonumber(was)
	if not ttl or ttl < 1 or ttl > 31536000000 then
		ttl = tonumber(ARGV[3])
	end
end
if rk then
	redis.call('ZADD', rk, 'XX', clock() + ttl, ARGV[1])
else
	redis.call('PEXPIRE', key, ttl)
end
redis.call('PEXPIRE', info, ttl)
-- The mark (and the readers' set) outlive the holder (ipairs stops at nil).
for _, k in ipairs({mark, rk}) do
	if redis.call('PTTL', k) < ttl then
		redis.call('PEXPIRE', k, ttl)
	end
end
return {1, tonumber(redis.call('HGET', info, 'fence')) or 0, ttl}
