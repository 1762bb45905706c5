-- extend: push the expiry out to ttl_ms from now if the token holds the lock.
-- KEYS: lock, info.  ARGV: token, ttl_ms (0: the TTL it was acquired with),
-- fallback_ttl_ms.  Returns {1, fence, ttl_ms} or {0}.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return {0}
end
local ttl = tonumber(ARGV[2])
if ttl <= 0 then
	ttl = tonumber(redis.call('HGET', KEYS[2], 'ttl_ms')) or tonumber(ARGV[3])
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {1, tonumber(redis.call('HGET', KEYS[2], 'fence')) or 0, ttl}
