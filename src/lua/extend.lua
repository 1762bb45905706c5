-- extend: push the expiry out to ttl_ms from now if the token holds the lock.
-- KEYS: lock, info.  ARGV: token, ttl_ms (0: the TTL it was acquired with),
-- fallback_ttl_ms.  Returns {1, fence, ttl_ms} or {0}.  A semaphore's
-- holder (see acquire.lua) extends its own slot, and the limit with it.
local key, info, mark = KEYS[1], KEYS[2], nil
local cur = redis.call('GET', key)
if cur ~= ARGV[1] then
	local limit = cur and tonumber(string.match(cur, '^limit:(%d+)$'))
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
local ttl = tonumber(ARGV[2])
if ttl <= 0 then
	ttl = tonumber(redis.call('HGET', info, 'ttl_ms')) or tonumber(ARGV[3])
end
redis.call('PEXPIRE', key, ttl)
redis.call('PEXPIRE', info, ttl)
if mark and redis.call('PTTL', mark) < ttl then
	redis.call('PEXPIRE', mark, ttl)
end
return {1, tonumber(redis.call('HGET', info, 'fence')) or 0, ttl}
