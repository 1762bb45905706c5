-- extend: push the token's hold out to ttl_ms from now, if it has one.
-- KEYS: lock, info.  ARGV: token, ttl_ms (0: the TTL it was acquired with),
-- fallback_ttl_ms.  Returns {1, fence, ttl_ms} or {0}.  A holder of a
-- marked lock (see lib.lua) extends its own place, and the mark ends with
-- the latest holder again (fit()).
local token = ARGV[1]
local now = clock()
local cur = redis.call('GET', KEYS[1])
-- What this script may write, checked before it writes (see lib.lua).
limit_of(KEYS[1], cur)
local kind, _, live = judge(KEYS[1], cur, now, true)
local info
if kind == 'x' and cur == token then
	info = KEYS[2]
elseif kind == SHARED or kind == 'limit' then
	expect({KEYS[1] .. ':holders', 'zset'})
	for _, tok in ipairs(live) do
		if tok == token then
			info = KEYS[1] .. ':holder:' .. token
		end
	end
end
if not info then
	return {0}
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
redis.call('PEXPIRE', info, ttl)
if kind == 'x' then
	redis.call('PEXPIRE', KEYS[1], ttl)
else
	redis.call('ZADD', KEYS[1] .. ':holders', 'XX', now + ttl, token)
	fit(KEYS[1], now)
end
return {1, tonumber(redis.call('HGET', info, 'fence')) or 0, ttl}
