-- extend: push the token's hold out to ttl_ms from now, if it has one.
-- KEYS (K), ARGV (A: ttl_ms 0 is the TTL it was acquired with) and its
-- reply (extended, code 1, or 0 when the token holds nothing; with who
-- asked the holder to stop, exec --replace, when someone has: see
-- acquire.lua): see src/lua/contract.  The hold's record
-- gets its new end, and the key its expiry at the latest holder's end
-- (hold_write() in lib.lua).
local token = A.token
local now = clock()
local H = hold_read(K.lock, now)
local r = hold_find(H, token)
if not r then
	writable(K.none)
	return reply(R_EXTENDED, {code = 0})
end
-- The TTL it was taken with, if its record says one that rlock could
-- have written (a whole number of milliseconds, up to a year); else the
-- fallback.
local ttl = tonumber(A.ttl_ms)
if ttl <= 0 then
	ttl = tonumber(r.l)
	if not ttl or ttl ~= math.floor(ttl) or ttl < 1 or
	    ttl > 31536000000 then
		ttl = tonumber(A.fallback_ttl_ms)
	end
end
r.e = now + ttl
hold_set(H, token, r)
hold_write(H, now)
return reply(R_EXTENDED, {code = 1, fence = tonumber(r.f) or 0,
	ttl_ms = ttl, replace_host = r.qh and tostring(r.qh),
	replace_pid = r.qp and tostring(r.qp)})
