-- fence: after a quorum acquire whose servers handed out different fences,
-- raise this server's counter (never lower it) to the fence the holder
-- uses, so that any later majority, which shares a server with this one,
-- hands out a greater one.  KEYS: fence, info, lock.  ARGV: token, fence.
if redis.call('GET', KEYS[3]) ~= ARGV[1] then
	return 0
end
if (tonumber(redis.call('GET', KEYS[1])) or 0) < tonumber(ARGV[2]) then
	redis.call('SET', KEYS[1], ARGV[2])
end
redis.call('HSET', KEYS[2], 'fence', ARGV[2])
return 1
