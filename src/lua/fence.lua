-- fence: after a quorum acquire whose servers handed out different fences,
-- raise this server's counter (never lower it) to the fence the holder
-- uses, so that any later majority, which shares a server with this one,
-- hands out a greater one.  KEYS: fence, info, lock.  ARGV: token, fence.
-- A marked lock's holder (see lib.lua) has its fence in its own hash.  The
-- counter keeps the expiry its acquire gave it (see new_fence()).
local info = KEYS[2]
local cur = redis.call('GET', KEYS[3])
if (cur == SHARED or limit_of(KEYS[3], cur)) and
    redis.call('ZRANK', KEYS[3] .. ':holders', ARGV[1]) then
	info = KEYS[3] .. ':holder:' .. ARGV[1]
elseif cur ~= ARGV[1] then
	return 0
end
if (tonumber(redis.call('GET', KEYS[1])) or 0) < tonumber(ARGV[2]) then
	redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
end
redis.call('HSET', info, 'fence', ARGV[2])
return 1
