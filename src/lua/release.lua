-- release: delete the lock if, and only if, the token holds it, and wake
-- one waiter.  KEYS: lock, info, wake.  ARGV: token.  Returns 1 or 0.
-- The wake list holds at most one element and expires soon: a waiter that
-- checked the lock just before the release finds it when it blocks.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('RPUSH', KEYS[3], '1')
redis.call('PEXPIRE', KEYS[3], 10000)
return 1
