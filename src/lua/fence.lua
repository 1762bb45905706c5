-- fence: after a quorum acquire whose servers handed out different fences,
-- raise this server's counter (never lower it) to the fence the holder
-- uses, so that any later majority, which shares a server with this one,
-- hands out a greater one.  KEYS: fence, info, lock.  ARGV: token, fence.
-- The holder's record (see lib.lua) keeps the fence it uses.  The counter
-- keeps the expiry its acquire gave it (see new_fence()).
local H = hold_read(KEYS[3], nil)
local r = hold_find(H, ARGV[1])
if not r then
	return 0
end
expect_fence(KEYS[1])
if (tonumber(redis.call('GET', KEYS[1])) or 0) < tonumber(ARGV[2]) then
	redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
end
r.f = ARGV[2]
redis.call('HSET', KEYS[3], ARGV[1], encoded(r))
return 1
