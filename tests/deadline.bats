#!/usr/bin/env bats
# deadline.bats: a request ends by the deadline fixed when it was first
# sent, and a command by its --timeout or -w, whatever the servers answer
# (issue 37, break 8).  A Cluster that sends the request back and forth for
# ever (a slot MIGRATING toward a node that is not IMPORTING it) ends the
# command with exit 69 and one line in words; a single SIGTERM ends it,
# give-back included; -v shows the hops.  Every rlock here runs under
# timeout(1), so that a hang fails the test instead of the suite.

load helpers
load exec-helpers
load dist-helpers

setup_file() { start_cluster; }
teardown_file() { stop_all_redis; }

setup() {
	require_rlock
	unset RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG RLOCK_URL
	cd "$BATS_TEST_TMPDIR"
	LOOP_SLOT=
}

teardown() {
	# The file's cluster outlives the test: put the slot back.
	if [[ -n $LOOP_SLOT ]]; then
		ccli 1 CLUSTER SETSLOT "$LOOP_SLOT" STABLE >/dev/null || true
	fi
	thaw_all
	exec_teardown
}

# The three masters as seeds.
seeds() {
	echo "redis://127.0.0.1:$C1_PORT,127.0.0.1:$C2_PORT,127.0.0.1:$C3_PORT"
}

# moveds I: how many MOVED replies node I has given.
moveds() {
	ccli "$1" INFO errorstats | tr -d '\r' |
		sed -n 's/^errorstat_MOVED:count=\([0-9]*\).*/\1/p' | grep . || echo 0
}

# until_moveds I N: wait (bounded: 10 s) until node I has given N more
# MOVED replies than it had when asked first.
until_moveds() {
	local before k
	before=$(moveds "$1")
	for ((k = 0; k < 500; k++)); do
		(($(moveds "$1") >= before + $2)) && return 0
		sleep 0.02
	done
	return 1
}

# loop_on NAME: leave NAME's slot MIGRATING on its owner (node 1) toward
# node 2, which is not IMPORTING it: node 1 answers ASK (the key is not
# there), node 2 answers MOVED back to node 1, for ever.
loop_on() {
	LOOP_SLOT=$(slot_of "rlock:{$1}")
	ccli 1 CLUSTER SETSLOT "$LOOP_SLOT" MIGRATING "$(ccli 2 CLUSTER MYID)" >/dev/null
	[[ $(ccli 1 EXISTS "rlock:{$1}") == ASK* ]]
	[[ $(ccli 2 EXISTS "rlock:{$1}") == MOVED* ]]
}

@test "deadline: a Cluster redirect loop (MIGRATING toward a node not IMPORTING) ends the request by --connect-timeout + --timeout, exit 69 in words" {
	local name t0 el
	name=$(name_on_node 1 loop)
	loop_on "$name"
	t0=$(now_ms)
	run --separate-stderr timeout -s KILL 20 "$RLOCK" -u "$(seeds)" \
		--connect-timeout 1s --timeout 2s acquire -n "$name"
	el=$(($(now_ms) - t0))
	((status != 137)) || fail "still running after 20 s (killed by timeout(1))"
	assert_failure 69
	assert_one_error_line
	[[ $stderr == *"did not end within 3s"* && $stderr == *redirect* ]] ||
		fail "not in words: $stderr"
	[[ $stderr != *"MOVED "* && $stderr != *"ASK "* ]] || fail "raw: $stderr"
	# The request: 3 s; then the give-back of a failed attempt, 3 s more.
	((el < 10000)) || fail "took $el ms"
	# Nothing was taken.
	ccli 1 CLUSTER SETSLOT "$LOOP_SLOT" STABLE >/dev/null
	assert_equal "$(ccli 1 EXISTS "rlock:{$name}")" 0
	assert_equal "$(ccli 2 EXISTS "rlock:{$name}")" "MOVED $LOOP_SLOT 127.0.0.1:$C1_PORT"
}

@test "deadline: -v shows each hop of the loop" {
	local name
	name=$(name_on_node 1 hops)
	loop_on "$name"
	run --separate-stderr timeout -s KILL 20 "$RLOCK" -v -u "$(seeds)" \
		--connect-timeout 1s --timeout 1s acquire -n "$name"
	((status != 137)) || fail "still running after 20 s (killed by timeout(1))"
	assert_failure 69
	[[ $stderr == *"slot $LOOP_SLOT is moving to 127.0.0.1:$C2_PORT: asked there"* ]] ||
		fail "no hop to node 2: $stderr"
	[[ $stderr == *"slot $LOOP_SLOT is served by 127.0.0.1:$C1_PORT: sent there"* ]] ||
		fail "no hop back to node 1: $stderr"
	[[ $stderr == *"sent back and forth"* ]] || fail "no pause said: $stderr"
	# In words: no raw redirection.
	[[ $stderr != *"MOVED "* && $stderr != *"ASK "* ]] || fail "raw: $stderr"
}

@test "deadline: under -w the loop is ridden through and the command still ends by -w, exit 69 in words" {
	local name t0 el
	name=$(name_on_node 1 wloop)
	loop_on "$name"
	t0=$(now_ms)
	run --separate-stderr timeout -s KILL 30 "$RLOCK" -u "$(seeds)" \
		--connect-timeout 1s --timeout 1s acquire -w 3s "$name"
	el=$(($(now_ms) - t0))
	((status != 137)) || fail "still running after 30 s (killed by timeout(1))"
	assert_failure 69
	assert_one_error_line
	[[ $stderr == *redirect* ]] || fail "not in words: $stderr"
	# -w 3s, and at most one request (2 s) begun before it ran out.
	((el < 12000)) || fail "took $el ms"
}

@test "deadline: one SIGTERM ends an acquire caught in the loop, its give-back bounded too" {
	local name t0 el
	name=$(name_on_node 1 term)
	loop_on "$name"
	bg_start A timeout -s KILL 60 "$RLOCK" -u "$(seeds)" \
		--connect-timeout 1s --timeout 2s acquire -w 50s "$name"
	# In the loop: node 2 sends it back.
	until_moveds 2 3 || fail "the acquire never reached node 2"
	t0=$(now_ms)
	kill -TERM "$(pgrep -P "$A")"
	bg_wait "$A" 10000 || fail "still running 10 s after one SIGTERM"
	el=$(($(now_ms) - t0))
	# The give-back is one request: 3 s at most.
	((el < 10000)) || fail "ended $el ms after the SIGTERM"
	# Died of the signal (timeout(1) reports 128+15), not killed at 60 s.
	assert_equal "$BG_STATUS" 143
}

# blackhole: a loopback listener that never accepts, its queue filled, so
# that a connect to it is never answered (SYNs dropped); prints its port,
# lives at most 60 s.
blackhole() {
	/usr/bin/python3 -c '
import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(0)
port = s.getsockname()[1]
fill = []
for i in range(3):
    c = socket.socket()
    c.setblocking(False)
    try:
        c.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    fill.append(c)
print(port, flush=True)
time.sleep(60)
'
}

@test "deadline: (a) a chain of nodes that do not answer a connect ends the request by --connect-timeout + --timeout, not one fresh --connect-timeout per hop" {
	local name t0 el
	name=$(name_on_node 1 chain)
	bg_start B1 bash -c "$(declare -f blackhole); blackhole"
	bg_start B2 bash -c "$(declare -f blackhole); blackhole"
	wait_port_line B1
	wait_port_line B2
	# Two doors that never answer, then the slot's owner: 4 s for each
	# door would make 8 s; the request's own deadline is 4 s + 1 s.
	t0=$(now_ms)
	run --separate-stderr timeout -s KILL 30 "$RLOCK" \
		-u "redis://127.0.0.1:$B1_PORT,127.0.0.1:$B2_PORT,127.0.0.1:$C1_PORT" \
		--connect-timeout 4s --timeout 1s acquire -n "$name"
	el=$(($(now_ms) - t0))
	((status != 137)) || fail "still running after 30 s (killed by timeout(1))"
	assert_failure 69
	assert_one_error_line
	[[ $stderr == *"request's deadline, 5s after its start"* ]] || fail "not in words: $stderr"
	((el < 7000)) || fail "took $el ms: more than --connect-timeout + --timeout"
}

# The give-back (issue 50, finding 3): a command that fails against a
# server that took its request but never answers gives back what it may
# have taken within a bound of its own, so that it ends by --timeout (or
# -w) plus at most a quarter of --timeout in all (a sixteenth for the last
# request, a sixteenth for the give-back; the rest is room for the process's
# own start on a loaded machine).  A frozen server (SIGSTOPped) accepts
# connections and never answers.

@test "deadline: acquire -n against a frozen server ends by 1.25x --timeout, give-back included" {
	local t0 el
	start_redis_as FZ
	freeze_var FZ
	t0=$(now_ms)
	run --separate-stderr timeout -s KILL 30 "$RLOCK" -u "$FZ_URL" --timeout 4s acquire -n job
	el=$(($(now_ms) - t0))
	assert_failure 69
	assert_one_error_line
	assert_between "$el" 0 5000 "acquire -n with --timeout 4s took (ms)"
}

@test "deadline: acquire -w 3s against silent Cluster seeds ends by 3s plus a quarter of --timeout" {
	local t0 el
	start_redis_as FZ1
	start_redis_as FZ2
	freeze_var FZ1
	freeze_var FZ2
	t0=$(now_ms)
	run --separate-stderr timeout -s KILL 30 "$RLOCK" \
		-u "redis://127.0.0.1:$FZ1_PORT,127.0.0.1:$FZ2_PORT" --timeout 8s acquire -w 3s job
	el=$(($(now_ms) - t0))
	assert_failure 69
	assert_one_error_line
	assert_between "$el" 0 5000 "acquire -w 3s with --timeout 8s took (ms)"
}

@test "deadline: one SIGTERM ends acquire -w against silent seeds within a quarter of --timeout" {
	local t0 el
	start_redis_as FZ1
	start_redis_as FZ2
	freeze_var FZ1
	freeze_var FZ2
	bg_start A timeout -s KILL 60 "$RLOCK" -u "redis://127.0.0.1:$FZ1_PORT,127.0.0.1:$FZ2_PORT" \
		--timeout 2s acquire -w 50s job
	# Into its first attempt (the signal ends it wherever it is).
	sleep 0.5
	t0=$(now_ms)
	kill -TERM "$(pgrep -P "$A")"
	bg_wait "$A" 10000 || fail "still running 10 s after one SIGTERM"
	el=$(($(now_ms) - t0))
	assert_between "$el" 0 1000 "ended after the SIGTERM (ms)"
	assert_equal "$BG_STATUS" 143
}

# endproxy TARGET_PORT: a loopback proxy in front of TARGET_PORT that
# forwards both ways, except that the first reply to a client chunk
# naming EVALSHA goes out whole with the connection's end right behind it
# (corked, so that both arrive together): the script ran and its reply came,
# and the connection is gone before the next request.  Prints its port,
# lives at most 60 s.
endproxy() {
	/usr/bin/python3 -c '
import socket, sys, threading, time
target = int(sys.argv[1])
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(16)
print(ls.getsockname()[1], flush=True)
state = {"armed": True}
def pump(c, s, flag):
    try:
        while True:
            data = s.recv(65536)
            if not data:
                break
            if flag.get("script") and state["armed"]:
                state["armed"] = False
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                c.sendall(data)
                c.shutdown(socket.SHUT_WR)
                break
            c.sendall(data)
    except OSError:
        pass
    for x in (c, s):
        try:
            x.close()
        except OSError:
            pass
def serve(c):
    s = socket.create_connection(("127.0.0.1", target))
    flag = {}
    threading.Thread(target=pump, args=(c, s, flag), daemon=True).start()
    try:
        while True:
            data = c.recv(65536)
            if not data:
                break
            if b"EVALSHA" in data.upper():
                flag["script"] = True
            s.sendall(data)
    except OSError:
        pass
def main():
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
threading.Thread(target=main, daemon=True).start()
time.sleep(60)
' "$1"
}

@test "deadline: (b) --wait-replicas: a connection that closes between the acquire script and its WAIT does not confirm the write (WAIT goes on the write's connection or not at all)" {
	local t
	start_redis_as M
	start_redis_as R --replicaof 127.0.0.1 "$M_PORT"
	wait_replica_up M R
	# The scripts are loaded (EVALSHA answers through the proxy), and the
	# replica acknowledges now: this --wait-replicas goes through.
	t=$(rlock -u "$M_URL" --wait-replicas 1 acquire -t 10s pre)
	rlock -u "$M_URL" release --token "$t" pre
	bg_start P bash -c "$(declare -f endproxy); endproxy $M_PORT"
	wait_port_line P
	# The replica stops: it can acknowledge nothing more.  A WAIT on a new
	# connection has no write to wait for and counts it at once.
	echo "$R_PID" >>"$BATS_TEST_TMPDIR/.frozen"
	kill -STOP "$R_PID"
	run --separate-stderr timeout -s KILL 20 "$RLOCK" -u "redis://127.0.0.1:$P_PORT" \
		--timeout 1s --wait-replicas 1 acquire -n -t 30s wr
	((status != 137)) || fail "still running after 20 s (killed by timeout(1))"
	assert_failure 69
	assert_one_error_line
	[[ $stderr == *replica* ]] || fail "not in words: $stderr"
	# Unconfirmed: given back.
	assert_equal "$(rcli_as M EXISTS "rlock:{wr}")" 0
}
