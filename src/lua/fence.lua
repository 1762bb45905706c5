-- fence: after a quorum acquire whose servers handed out different fences,
-- raise this server's counter (never lower it) to the fence the holder
-- uses, so that any later majority, which shares a server with this one,
-- hands out a greater one.  KEYS (K) and ARGV (A): src/lua/contract.
-- The holder's record (see lib.lua) keeps the fence it uses.  The counter
-- keeps the expiry its acquire gave it (see new_fence()).
local H = hold_read(K.lock, nil)
local r = hold_find(H, A.token)
if not r then
	return 0
end
expect_fence(K.fence)
if (tonumber(redis.call('GET', K.fence)) or 0) < tonumber(A.fence) then
	redis.call('SET', K.fence, A.fence, 'KEEPTTL')
end
r.f = A.fence
redis.call('HSET', K.lock, A.token, encoded(r))
return 1
