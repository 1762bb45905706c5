-- note: record an event the client found itself in the history (see
-- record() in lib.lua): exec's heartbeat finding the lock lost.
-- KEYS (K) and ARGV (A): src/lua/contract; after those ARGV, the
-- entry's field/value pairs.
local fields = {}
for i = A_COUNT + 1, #ARGV do
	fields[#fields + 1] = ARGV[i]
end
fields[#fields + 1] = 'r'
fields[#fields + 1] = run_id(A.token)
record(K.lock, A.history_len, A.history_ttl_ms, A.event, fields)
return 1
