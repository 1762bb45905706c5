# dist-helpers.bash: helpers for quorum.bats, sentinel.bats and cluster.bats.
#
# Loaded after helpers.bash (and exec-helpers.bash). It adds what only the
# multi-server tests need: a quorum of independent servers, servers frozen
# with SIGSTOP (always resumed in teardown), a master with a replica and a
# sentinel, and a three-master Redis Cluster. Every server runs in the
# foreground of a background job (never daemonized), in a directory under
# the scope's temp dir, and is recorded by PID in the same list that
# helpers.bash's stop_all_redis reads, so it is stopped by PID. Every wait is
# bounded in count and time.

# ---------------------------------------------------------------------------
# Servers on chosen ports (sentinels, cluster nodes)
# ---------------------------------------------------------------------------

# _port_free PORT: nothing listens on 127.0.0.1:PORT (at the time of asking).
_port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# _wait_own_server PID PORT: wait (at most 5 s, 20 ms steps) until the server
# on PORT answers INFO with our PID as its process_id, so that a reply from
# somebody else's server on that port is never mistaken for ours.
_wait_own_server() {
	local pid=$1 port=$2 i
	for ((i = 0; i < 250; i++)); do
		_proc_alive "$pid" || return 1
		if redis-cli -h 127.0.0.1 -p "$port" INFO server 2>/dev/null |
			tr -d '\r' | grep -qx "process_id:$pid"; then
			return 0
		fi
		sleep 0.02
	done
	return 1
}

# _spawn_server VAR PORT DIR ARGS...: start `redis-server ARGS...` in the
# background with its log in DIR, record the PID, and wait until it answers.
# On success sets and exports VAR_PORT, VAR_PID, VAR_DIR and VAR_URL.
_spawn_server() {
	local var=$1 port=$2 dir=$3 pid
	shift 3
	redis-server "$@" </dev/null >>"$dir/stdout.log" 2>&1 3>&- &
	pid=$!
	echo "$pid" >>"$(_scope_dir)/.redis-pids"
	if _wait_own_server "$pid" "$port"; then
		printf -v "${var}_PORT" '%s' "$port"
		printf -v "${var}_PID" '%s' "$pid"
		printf -v "${var}_DIR" '%s' "$dir"
		printf -v "${var}_URL" '%s' "redis://127.0.0.1:$port"
		export "${var}_PORT" "${var}_PID" "${var}_DIR" "${var}_URL"
		return 0
	fi
	_kill_pid "$pid"
	return 1
}

# ---------------------------------------------------------------------------
# Quorum: independent masters Q1..QN
# ---------------------------------------------------------------------------

# start_quorum N: start N independent servers as Q1..QN (helpers.bash's
# start_redis_as) and export QUORUM_N and QUORUM_URLS (space-separated).
# Called in a test, the new servers shadow the file's for that test only and
# are stopped in its teardown.
start_quorum() {
	local n=$1 i urlv urls=
	for ((i = 1; i <= n; i++)); do
		start_redis_as "Q$i" || return 1
		urlv="Q${i}_URL"
		urls+="${urls:+ }${!urlv}"
	done
	QUORUM_N=$n
	QUORUM_URLS=$urls
	export QUORUM_N QUORUM_URLS
}

# quorum_urls: URLS, an array with a -u for each quorum server.
quorum_urls() {
	local u
	URLS=()
	for u in $QUORUM_URLS; do URLS+=(-u "$u"); done
}

# rlockq ARGS...: rlock with one -u per quorum server.
rlockq() {
	local a=() u
	for u in $QUORUM_URLS; do a+=(-u "$u"); done
	"$RLOCK" "${a[@]}" "$@"
}

# qcli I ARGS...: redis-cli against quorum server I.
qcli() {
	local i=$1
	shift
	rcli_as "Q$i" "$@"
}

qflushall() {
	local i
	for ((i = 1; i <= QUORUM_N; i++)); do qcli "$i" FLUSHALL >/dev/null || return 1; done
}

# freeze_node I: SIGSTOP quorum server I; thaw_all resumes it in teardown.
freeze_node() {
	local pidv="Q${1}_PID"
	echo "${!pidv}" >>"$BATS_TEST_TMPDIR/.frozen"
	kill -STOP "${!pidv}"
}

thaw_all() {
	local pid
	[[ -f "$BATS_TEST_TMPDIR/.frozen" ]] || return 0
	while read -r pid; do
		kill -CONT "$pid" 2>/dev/null || true
	done <"$BATS_TEST_TMPDIR/.frozen"
	rm -f "$BATS_TEST_TMPDIR/.frozen"
}

# nodes_with_token NAME TOKEN [I...]: how many of the given quorum servers
# (default all) hold lock NAME with TOKEN.
nodes_with_token() {
	local name=$1 tok=$2 n=0 i
	shift 2
	local nodes=("$@")
	((${#nodes[@]})) || nodes=($(seq 1 "$QUORUM_N"))
	for i in "${nodes[@]}"; do
		[[ "$(qcli "$i" HKEYS "rlock:{$name}")" == "$tok" ]] && n=$((n + 1))
	done
	echo "$n"
}

# assert_quorum_token NAME TOKEN: lock NAME holds TOKEN on every quorum
# server, or on a majority with no other token anywhere.  Acquire returns
# once a majority has granted: the rest of its requests, sent or (a
# connect still under way on a busy machine) not, land when they land; so
# all of them are waited for, bounded (3 s), before a majority is taken.
assert_quorum_token() {
	local name=$1 tok=$2 i n
	for ((i = 0; i < 150; i++)); do
		n=$(nodes_with_token "$name" "$tok")
		((n == QUORUM_N)) && return 0
		sleep 0.02
	done
	((n >= QUORUM_N / 2 + 1)) || fail "$name holds the token on $n of $QUORUM_N servers"
	for ((i = 1; i <= QUORUM_N; i++)); do
		local v
		v=$(qcli "$i" HKEYS "rlock:{$name}")
		[[ -z "$v" || "$v" == "$tok" ]] || fail "server $i holds another token for $name: $v"
	done
}

# nodes_with_key KEY [I...]: on how many of the given servers KEY exists.
nodes_with_key() {
	local key=$1 n=0 i
	shift
	local nodes=("$@")
	((${#nodes[@]})) || nodes=($(seq 1 "$QUORUM_N"))
	for i in "${nodes[@]}"; do
		[[ "$(qcli "$i" EXISTS "$key")" == 1 ]] && n=$((n + 1))
	done
	echo "$n"
}

# ---------------------------------------------------------------------------
# Sentinel: a master, a replica and one sentinel
# ---------------------------------------------------------------------------

# start_sentinel_group: start SM (master), SR (replica of SM) and SS (a
# sentinel monitoring SM as "mm", quorum 1, down-after 1000 ms,
# failover-timeout 5000 ms, its config file in its own dir, where it
# rewrites it). Returns once the replica is in sync and the sentinel knows
# both the master and a healthy replica (bounded: about 15 s).
start_sentinel_group() {
	start_redis_as SM --repl-diskless-sync yes --repl-diskless-sync-delay 0 || return 1
	start_redis_as SR --replicaof 127.0.0.1 "$SM_PORT" \
		--repl-diskless-sync yes --repl-diskless-sync-delay 0 || return 1
	wait_replica_online SM 10000 || {
		echo "start_sentinel_group: the replica never came online" >&2
		return 1
	}
	start_sentinel_as SS mm "$SM_PORT" || return 1
	wait_sentinel_ready SS mm "$SR_PORT" 10000 || {
		echo "start_sentinel_group: the sentinel never saw a healthy replica" >&2
		tail -20 "$SS_DIR/sentinel.log" >&2
		return 1
	}
	SENT_URL="redis-sentinel://127.0.0.1:$SS_PORT/mm"
	export SENT_URL
}

# wait_replica_online VAR [MAX_MS]: until the master started as VAR reports
# a replica in state online.
wait_replica_online() {
	local var=$1 max_ms=${2:-10000} i
	for ((i = 0; i < max_ms / 50; i++)); do
		rcli_as "$var" INFO replication 2>/dev/null | grep -q '^slave0:.*state=online' && return 0
		sleep 0.05
	done
	return 1
}

# start_sentinel_as VAR MASTER_NAME MASTER_PORT: one sentinel on a free
# port (at most 20 tries), config written in a fresh dir.
start_sentinel_as() {
	local var=$1 name=$2 mport=$3 scope dir port try
	scope=$(_scope_dir)
	for ((try = 0; try < 20; try++)); do
		port=$((20000 + RANDOM % 40001))
		_port_free "$port" || continue
		dir=$(mktemp -d "$scope/sentinel.XXXXXX")
		cat >"$dir/sentinel.conf" <<-EOF
			port $port
			bind 127.0.0.1
			daemonize no
			dir $dir
			logfile $dir/sentinel.log
			sentinel monitor $name 127.0.0.1 $mport 1
			sentinel down-after-milliseconds $name 1000
			sentinel failover-timeout $name 5000
		EOF
		if _spawn_server "$var" "$port" "$dir" "$dir/sentinel.conf" --sentinel; then
			return 0
		fi
	done
	echo "start_sentinel_as: could not start a sentinel after 20 tries" >&2
	return 1
}

# freeze_var VAR: SIGSTOP the server started as VAR (a hung host, a
# firewall that drops packets: the kernel still accepts connections, nothing
# answers); thaw_all resumes it in teardown.
freeze_var() {
	local pidv="${1}_PID"
	echo "${!pidv}" >>"$BATS_TEST_TMPDIR/.frozen"
	kill -STOP "${!pidv}"
}

# start_bare_sentinel_as VAR [CONF_LINE...]: a sentinel that monitors
# nothing (so it takes no part in any failover), on a free port, with extra
# lines in its config (users, say).  Asked for a master, it knows none.
start_bare_sentinel_as() {
	local var=$1 scope dir port try line
	shift
	scope=$(_scope_dir)
	for ((try = 0; try < 20; try++)); do
		port=$((20000 + RANDOM % 40001))
		_port_free "$port" || continue
		dir=$(mktemp -d "$scope/sentinel.XXXXXX")
		{
			printf 'port %s\nbind 127.0.0.1\ndaemonize no\ndir %s\nlogfile %s/sentinel.log\n' \
				"$port" "$dir" "$dir"
			for line in "$@"; do printf '%s\n' "$line"; done
		} >"$dir/sentinel.conf"
		if _spawn_server "$var" "$port" "$dir" "$dir/sentinel.conf" --sentinel; then
			return 0
		fi
	done
	echo "start_bare_sentinel_as: could not start a sentinel after 20 tries" >&2
	return 1
}

# start_frozen_sentinel_as VAR: start_bare_sentinel_as, then SIGSTOPped.
start_frozen_sentinel_as() {
	start_bare_sentinel_as "$1" && freeze_var "$1"
}

# start_stale_sentinel_as VAR MASTER_NAME: a sentinel that names a replica
# as MASTER_NAME's master: it monitors VAR_R, a replica of the group's
# replica SR (chained, so that the group's sentinel never sees it and the
# two never meet).  Returns once it names VAR_R and VAR_R is in sync.
start_stale_sentinel_as() {
	local var=$1 name=$2 rv="${1}_R" rp
	start_redis_as "$rv" --replicaof 127.0.0.1 "$SR_PORT" || return 1
	wait_replica_online SR 10000 || return 1
	rp="${rv}_PORT"
	start_sentinel_as "$var" "$name" "${!rp}" || return 1
	[[ "$(sentinel_master_port "$var" "$name")" == "${!rp}" ]]
}

# scli VAR ARGS...: redis-cli against the sentinel started as VAR.
scli() {
	local var=$1
	shift
	local portv="${var}_PORT"
	redis-cli -h 127.0.0.1 -p "${!portv}" "$@"
}

# sentinel_master_port VAR NAME: the master's port as the sentinel says.
sentinel_master_port() {
	scli "$1" SENTINEL GET-MASTER-ADDR-BY-NAME "$2" 2>/dev/null | sed -n 2p
}

# wait_sentinel_ready VAR NAME REPLICA_PORT [MAX_MS]: until the sentinel
# knows master NAME and lists REPLICA_PORT as a replica with flags "slave"
# (not down or disconnected) and its link to the master up.
wait_sentinel_ready() {
	local var=$1 name=$2 rport=$3 max_ms=${4:-10000} i out
	for ((i = 0; i < max_ms / 100; i++)); do
		if [[ -n "$(sentinel_master_port "$var" "$name")" ]]; then
			out=$(scli "$var" SENTINEL REPLICAS "$name" 2>/dev/null | tr '\n' ' ')
			if [[ "$out" == *"port $rport "* && "$out" == *"flags slave "* &&
				"$out" == *"master-link-status ok "* ]]; then
				return 0
			fi
		fi
		sleep 0.1
	done
	return 1
}

# wait_master_change VAR NAME OLD_PORT [MAX_MS]: until the sentinel names a
# master other than OLD_PORT; prints the new port.
wait_master_change() {
	local var=$1 name=$2 old=$3 max_ms=${4:-15000} i p
	for ((i = 0; i < max_ms / 50; i++)); do
		p=$(sentinel_master_port "$var" "$name")
		if [[ -n "$p" && "$p" != "$old" ]]; then
			echo "$p"
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# wait_role VAR ROLE [MAX_MS]: until the server started as VAR reports ROLE
# (master or slave) in INFO replication.
wait_role() {
	local var=$1 role=$2 max_ms=${3:-10000} i
	for ((i = 0; i < max_ms / 50; i++)); do
		rcli_as "$var" INFO replication 2>/dev/null | tr -d '\r' | grep -qx "role:$role" && return 0
		sleep 0.05
	done
	return 1
}

# ---------------------------------------------------------------------------
# Redis Cluster: three masters C1, C2, C3
# ---------------------------------------------------------------------------

# start_cluster_node_as VAR: a cluster-enabled node on a port P where P and
# P+10000 (the cluster bus) are both free (at most 20 tries).
start_cluster_node_as() {
	local var=$1 scope dir port try
	scope=$(_scope_dir)
	for ((try = 0; try < 20; try++)); do
		port=$((20000 + RANDOM % 35000))
		if ! _port_free "$port" || ! _port_free $((port + 10000)); then continue; fi
		dir=$(mktemp -d "$scope/cnode.XXXXXX")
		if _spawn_server "$var" "$port" "$dir" --port "$port" --bind 127.0.0.1 \
			--save '' --appendonly no --daemonize no --dir "$dir" \
			--logfile "$dir/redis.log" --cluster-enabled yes \
			--cluster-config-file nodes.conf \
			--cluster-node-timeout "${CLUSTER_NODE_TIMEOUT:-5000}"; then
			return 0
		fi
	done
	echo "start_cluster_node_as: could not start a cluster node after 20 tries" >&2
	return 1
}

# start_cluster: three masters joined with `redis-cli --cluster create`;
# returns once every node says cluster_state:ok and knows all three nodes
# and all 16384 slots (bounded: about 15 s).
start_cluster() {
	start_cluster_node_as C1 || return 1
	start_cluster_node_as C2 || return 1
	start_cluster_node_as C3 || return 1
	redis-cli --cluster create "127.0.0.1:$C1_PORT" "127.0.0.1:$C2_PORT" \
		"127.0.0.1:$C3_PORT" --cluster-yes >"$(_scope_dir)/cluster-create.log" 2>&1 </dev/null || {
		cat "$(_scope_dir)/cluster-create.log" >&2
		return 1
	}
	local i v ok
	for ((i = 0; i < 300; i++)); do
		ok=1
		for v in C1 C2 C3; do
			local info
			info=$(rcli_as "$v" CLUSTER INFO 2>/dev/null | tr -d '\r')
			grep -qx 'cluster_state:ok' <<<"$info" &&
				grep -qx 'cluster_known_nodes:3' <<<"$info" &&
				grep -qx 'cluster_slots_ok:16384' <<<"$info" || ok=0
		done
		((ok)) && return 0
		sleep 0.05
	done
	echo "start_cluster: the cluster never became ok" >&2
	return 1
}

# start_cluster_replicas: six nodes CR1..CR6 joined with `redis-cli --cluster
# create --cluster-replicas 1` (three masters, each with a replica), with a
# cluster-node-timeout of 1 s so that a replica is promoted soon after its
# master dies; returns once every node says cluster_state:ok, knows all six
# and all 16384 slots, and three replicas have synced (bounded: about 30 s).
start_cluster_replicas() {
	local v i ok info addrs=()
	for v in CR1 CR2 CR3 CR4 CR5 CR6; do
		CLUSTER_NODE_TIMEOUT=1000 start_cluster_node_as "$v" || return 1
		local pv="${v}_PORT"
		addrs+=("127.0.0.1:${!pv}")
	done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 \
		--cluster-yes >"$(_scope_dir)/cluster-create.log" 2>&1 </dev/null || {
		cat "$(_scope_dir)/cluster-create.log" >&2
		return 1
	}
	for ((i = 0; i < 600; i++)); do
		ok=1
		for v in CR1 CR2 CR3 CR4 CR5 CR6; do
			info=$(rcli_as "$v" CLUSTER INFO 2>/dev/null | tr -d '\r')
			grep -qx 'cluster_state:ok' <<<"$info" &&
				grep -qx 'cluster_known_nodes:6' <<<"$info" &&
				grep -qx 'cluster_slots_ok:16384' <<<"$info" || ok=0
		done
		# Every master has a replica that has synced with it (a replica
		# that never did refuses to be promoted).
		local ups=0
		for v in CR1 CR2 CR3 CR4 CR5 CR6; do
			rcli_as "$v" INFO replication 2>/dev/null | tr -d '\r' |
				grep -qx 'master_link_status:up' && ups=$((ups + 1))
		done
		((ups == 3)) || ok=0
		((ok)) && return 0
		sleep 0.05
	done
	echo "start_cluster_replicas: the cluster never became ok" >&2
	return 1
}

# crport_owner NAME: the port of the master (of CR1..CR6) that serves lock
# NAME's slot, asked of any live node.  (Here every redis-cli is bounded by
# timeout(1): a frozen node accepts connections but never answers.)
crport_owner() {
	local v slot pv
	for v in CR1 CR2 CR3 CR4 CR5 CR6; do
		pv="${v}_PORT"
		slot=$(timeout 2 redis-cli -h 127.0.0.1 -p "${!pv}" CLUSTER KEYSLOT "rlock:{$1}" 2>/dev/null) || continue
		[[ "$slot" =~ ^[0-9]+$ ]] || continue
		timeout 2 redis-cli -h 127.0.0.1 -p "${!pv}" CLUSTER NODES 2>/dev/null | tr -d '\r' |
			awk -v s="$slot" '
			$3 ~ /master/ && $3 !~ /fail/ {
				split($2, a, "[:@]")
				for (i = 9; i <= NF; i++) {
					if ($i ~ /^\[/) continue
					n = split($i, r, "-")
					lo = r[1]; hi = (n > 1) ? r[2] : r[1]
					if (s + 0 >= lo + 0 && s + 0 <= hi + 0) { print a[2]; exit }
				}
			}'
		return 0
	done
	return 1
}

# cr_replicated_masters: the ports of the live masters that have a live
# replica (which a failover can promote), one a line.
cr_replicated_masters() {
	local v pv
	for v in CR1 CR2 CR3 CR4 CR5 CR6; do
		pv="${v}_PORT"
		timeout 2 redis-cli -h 127.0.0.1 -p "${!pv}" CLUSTER NODES 2>/dev/null | tr -d '\r' |
			awk '$3 ~ /slave/ && $3 !~ /fail/ { has[$4] = 1 }
			$3 ~ /master/ && $3 !~ /fail/ && NF >= 9 { split($2, a, "[:@]"); port[$1] = a[2] }
			END { for (id in port) if (id in has) print port[id] }' | grep . && return 0
	done
	return 1
}

# cr_name_replicated PREFIX: a lock name (PREFIX-N) whose slot's master has
# a live replica (tries at most 100 names).
cr_name_replicated() {
	local k ok
	ok=$(cr_replicated_masters) || return 1
	for ((k = 0; k < 100; k++)); do
		grep -qx "$(crport_owner "$1-$k")" <<<"$ok" && { echo "$1-$k"; return 0; }
	done
	return 1
}

# crvar_of_port PORT: which of CR1..CR6 listens on PORT.
crvar_of_port() {
	local v pv
	for v in CR1 CR2 CR3 CR4 CR5 CR6; do
		pv="${v}_PORT"
		[[ "${!pv}" == "$1" ]] && { echo "$v"; return 0; }
	done
	return 1
}

# cr_masters: the ports of the live masters, one a line (asked of any node).
cr_masters() {
	local v pv
	for v in CR1 CR2 CR3 CR4 CR5 CR6; do
		pv="${v}_PORT"
		timeout 2 redis-cli -h 127.0.0.1 -p "${!pv}" CLUSTER NODES 2>/dev/null | tr -d '\r' |
			awk '$3 ~ /master/ && $3 !~ /fail/ && NF >= 9 { split($2, a, "[:@]"); print a[2] }' |
			grep . && return 0
	done
	return 1
}

# ccli I ARGS...: redis-cli against cluster node I (no redirections).
ccli() {
	local i=$1
	shift
	rcli_as "C$i" "$@"
}

# slot_of KEY: the key's hash slot.
slot_of() {
	ccli 1 CLUSTER KEYSLOT "$1"
}

# owner_port SLOT: the port of the master that serves SLOT (CLUSTER NODES).
owner_port() {
	ccli 1 CLUSTER NODES | tr -d '\r' | awk -v s="$1" '
		$3 ~ /master/ {
			split($2, a, "[:@]")
			for (i = 9; i <= NF; i++) {
				if ($i ~ /^\[/) continue
				n = split($i, r, "-")
				lo = r[1]; hi = (n > 1) ? r[2] : r[1]
				if (s + 0 >= lo + 0 && s + 0 <= hi + 0) { print a[2]; exit }
			}
		}'
}

# owner_of NAME: the cluster node number (1-3) that holds lock NAME's keys.
owner_of() {
	local p i portv
	p=$(owner_port "$(slot_of "rlock:{$1}")")
	for i in 1 2 3; do
		portv="C${i}_PORT"
		[[ "${!portv}" == "$p" ]] && { echo "$i"; return 0; }
	done
	return 1
}

# name_on_node I [PREFIX]: print a lock name (PREFIX-N) whose slot is served
# by cluster node I (tries at most 200 names).
name_on_node() {
	local want=$1 pre=${2:-lk} k
	for ((k = 0; k < 200; k++)); do
		if [[ "$(owner_of "$pre-$k")" == "$want" ]]; then
			echo "$pre-$k"
			return 0
		fi
	done
	return 1
}

cflushall() {
	local i
	for i in 1 2 3; do ccli "$i" FLUSHALL >/dev/null || return 1; done
}
