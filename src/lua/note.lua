-- note: record an event the client found itself in the history (see
-- record() in lib.lua): exec's heartbeat finding the lock lost.
-- KEYS: lock, log.  ARGV: event, history_len, history_ttl_ms, token, then the
-- entry's field/value pairs.
local fields = {}
for i = 5, #ARGV do
	fields[#fields + 1] = ARGV[i]
end
fields[#fields + 1] = 'r'
fields[#fields + 1] = run_id(ARGV[4])
record(KEYS[1], ARGV[2], ARGV[3], ARGV[1], fields)
return 1
