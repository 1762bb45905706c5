-- fence: after a quorum acquire whose servers handed out different fences,
-- raise this server's counter (never lower it) to the fence the holder
-- uses, so that any later majority, which shares a server with this one,
-- hands out a greater one.  KEYS: fence, info, lock.  ARGV: token, fence.
-- A reader's (see lib.lua) fence is in its own hash.
local info = KEYS[2]
local cur = redis.call('GET', KEYS[3])
if cur == SHARED and redis.call('ZRANK', KEYS[3] .. ':readers', ARGV[1]) then
	info = KEYS[3] .. ':reader:' .. ARGV[1]
elseif cur ~= ARGV[1] then
	return 0
end
if (tonumber(redis.call('GET', KEYS[1])) or 0) < tonumber(ARGV[2]) then
	redis.call('SET', KEYS[1], ARGV[2])
end
redis.call('HSET', info, 'fence', ARGV[2])
return 1
