-- extend: push the token's hold out to ttl_ms from now, if it has one.
-- KEYS: lock, info.  ARGV: token, ttl_ms (0: the TTL it was acquired with),
-- fallback_ttl_ms.  Returns {1, fence, ttl_ms} or {0}.  The hold's record
-- gets its new end, and the key its expiry at the latest holder's end
-- (hold_write() in lib.lua).
local token = ARGV[1]
local now = clock()
local H = hold_read(KEYS[1], now)
local r = hold_find(H, token)
if not r then
	return {0}
end
-- The TTL it was taken with, if its record says one that rlock could
-- have written (a whole number of milliseconds, up to a year); else the
-- fallback.
local ttl = tonumber(ARGV[2])
if ttl <= 0 then
	ttl = tonumber(r.l)
	if not ttl or ttl ~= math.floor(ttl) or ttl < 1 or
	    ttl > 31536000000 then
		ttl = tonumber(ARGV[3])
	end
end
r.e = now + ttl
hold_set(H, token, r)
hold_write(H, now)
return {1, tonumber(r.f) or 0, ttl}
