#!/usr/bin/env bats
# quickstart.bats: the first five minutes, as the README and the manual tell
# them: the crontab line copied as it stands runs its job once per run across
# a fleet whose crons fire a moment apart; every crontab line of the docs
# names the binary by its full path and holds the lock with --min-hold; a
# run that invites the double run says so; a password file a job may not
# read is exit 77 with the remedy, and the group the README sets up lets a
# non-root job read it; every example of output in the docs is shaped like
# what rlock prints; rlock help.

load helpers
load exec-helpers

TOP="$BATS_TEST_DIRNAME/.."

setup_file() { default_setup_file; }
teardown_file() { default_teardown_file; }
setup() { default_setup; }
teardown() {
	cleanup_test
	[[ -z "${PUBDIR:-}" ]] || rm -rf "$PUBDIR"
}

# A directory anyone may enter (the test's own temp dir is under a 0700
# one), for files another user must reach: sets PUBDIR.
public_dir() {
	PUBDIR=$(mktemp -d /tmp/rlock-quickstart.XXXXXX)
	chmod 755 "$PUBDIR"
}

# The README's guarded crontab line, as a newcomer copies it (the quick
# start's, the first of them).
readme_cron_line() {
	grep -m1 -E '^ *\* \* \* \* \* /usr/local/bin/rlock .*exec ' "$TOP/README.md" |
		sed 's/^ *//'
}

# Every crontab line of the README and the manual: "FILE:LINE:TEXT".
doc_cron_lines() {
	grep -nHE '^ *([*0-9/,-]+ ){5}[^ ]*rlock ' "$TOP/README.md" "$TOP/man/rlock.1" "$TOP/man/rlock.conf.5" "$TOP"/man/rlock*.7
}

# fleet_round LINE ROUND SKEWS...: run the crontab LINE (its command part)
# on one "machine" per skew, as cron runs it: /bin/sh -c, an environment
# of HOME, LOGNAME, SHELL and PATH=/usr/bin:/bin, and the settings from the
# config file (cron's environment is empty; the test points RLOCK_CONFIG at
# its own file, /etc/rlock.conf's stand-in).  The machines are let go at
# the same instant, a line each down a FIFO they are all blocked reading,
# and each starts its clock skew later.  The job appends "ROUND MACHINE"
# to $STAMPS.  Waits (bounded) for every machine to end.
fleet_round() {
	local line=$1 round=$2 cmd fifo m=0 skew pids=() pid i
	shift 2
	cmd=$(printf '%s\n' "$line" | cut -d' ' -f6-)
	cmd=${cmd//\/usr\/local\/bin\/rlock/$RLOCK}
	cmd=${cmd//\/usr\/local\/bin\/report/$JOB $round}
	fifo="$BATS_TEST_TMPDIR/go.$round"
	mkfifo "$fifo"
	# Open read-write: no open of it blocks, and it stays open until all
	# have read their line.
	exec 5<>"$fifo"
	for skew in "$@"; do
		m=$((m + 1))
		env -i HOME="$BATS_TEST_TMPDIR" LOGNAME=cron SHELL=/bin/sh \
			PATH=/usr/bin:/bin RLOCK_CONFIG="$CONF" MACHINE="web$m" \
			/bin/sh -c ': >"$1.ready.$4"; read x <"$1"; sleep "$2"; exec /bin/sh -c "$3"' \
			sh "$fifo" "$skew" "$cmd" "$m" \
			</dev/null >>"$BATS_TEST_TMPDIR/cron.out" \
			2>>"$BATS_TEST_TMPDIR/cron.err" 3>&- 5>&- &
		pids+=("$!")
		echo "$!" >>"$BATS_TEST_TMPDIR/.bg-pids"
	done
	for ((i = 0; i < 500; i++)); do
		[[ $(ls "$fifo".ready.* 2>/dev/null | wc -l) -eq $m ]] && break
		sleep 0.01
	done
	for ((i = 0; i < m; i++)); do echo go >&5; done
	for pid in "${pids[@]}"; do
		bg_wait "$pid" 20000 || { exec 5>&-; fail "a machine of round $round did not end"; }
	done
	exec 5>&-
}

fleet_setup() {
	start_redis_auth_as AUTH s3cret
	printf 's3cret\n' >"$BATS_TEST_TMPDIR/rlock.password"
	chmod 600 "$BATS_TEST_TMPDIR/rlock.password"
	CONF="$BATS_TEST_TMPDIR/rlock.conf"
	printf 'url = %s\npassword-file = %s\n' "$AUTH_URL" \
		"$BATS_TEST_TMPDIR/rlock.password" >"$CONF"
	STAMPS="$BATS_TEST_TMPDIR/stamps"
	JOB=$(make_script report "echo \"\$1 \$MACHINE\" >>'$STAMPS'")
	: >"$STAMPS"
}

# Each round: one run.  Between rounds the minute passes: the lock must be
# due to expire within the period (so that the next minute's run can take
# it), and the test moves the clock on by expiring it now, and the
# period's start with it (--every's schedule).
run_fleet() {
	local line=$1 rounds=$2 r runs pttl key
	key='rlock:{nightly-report}'
	for ((r = 1; r <= rounds; r++)); do
		fleet_round "$line" "$r" 0 0.05 0.2
		runs=$(grep -c "^$r " "$STAMPS" || true)
		echo "round $r: $runs run(s)" >>"$BATS_TEST_TMPDIR/rounds"
		pttl=$(RCLI_AUTH=s3cret rcli_as AUTH PTTL "$key")
		if [[ "$pttl" -gt 60000 ]]; then
			fail "round $r: the lock outlives the minute (PTTL $pttl ms)"
		fi
		RCLI_AUTH=s3cret rcli_as AUTH DEL "$key" "$key:every" >/dev/null
	done
}

@test "quickstart: the README's crontab line on three machines at once runs the job once, every round" {
	local line
	line=$(readme_cron_line)
	[[ -n "$line" ]] || fail "no '* * * * * /usr/local/bin/rlock ... exec' line in README.md"
	fleet_setup
	[[ "$line" == *" --every 1m "* ]] || fail "the quick start's line has no --every 1m: $line"
	run_fleet "$line" 5
	cat "$BATS_TEST_TMPDIR/rounds"
	run grep -c ' 1 run(s)$' "$BATS_TEST_TMPDIR/rounds"
	assert_output 5
	# Nothing the machines printed is an error (the busy ones are quiet).
	run cat "$BATS_TEST_TMPDIR/cron.err"
	assert_output ""
}

@test "quickstart: the README's line with a machine 3 s late still runs the job once (the late one is refused, quiet)" {
	local line
	line=$(readme_cron_line)
	fleet_setup
	fleet_round "$line" 1 0 0.05 3
	assert_equal "$(grep -c '^1 ' "$STAMPS")" 1
	run cat "$BATS_TEST_TMPDIR/cron.err"
	assert_output ""
}

@test "quickstart: the same line without --every runs the job twice (the harness sees a double run)" {
	local line
	line=$(readme_cron_line)
	line=${line/--every 1m /}
	[[ "$line" != *every* ]] || fail "could not take --every out of: $line"
	fleet_setup
	run_fleet "$line" 3
	cat "$BATS_TEST_TMPDIR/rounds"
	run grep -cE ' [2-9] run\(s\)$' "$BATS_TEST_TMPDIR/rounds"
	[[ "$output" -ge 1 ]] || fail "no round ran twice: the harness cannot tell"
	# And each machine that ran it so briefly was told why.
	run grep -c 'min-hold' "$BATS_TEST_TMPDIR/cron.err"
	[[ "$output" -ge 1 ]]
}

@test "quickstart: every crontab line in the README and the manual has rlock's full path and --every or --min-hold with -n" {
	local n=0 l text
	while IFS= read -r l; do
		n=$((n + 1))
		text=${l#*:*:}
		[[ "$text" =~ [[:space:]]/usr/(local/)?bin/rlock[[:space:]] ]] ||
			fail "not the full path of rlock: $l"
		if [[ "$text" =~ [[:space:]]exec[[:space:]] && "$text" =~ [[:space:]]-n[[:space:]] ]]; then
			[[ "$text" == *"--every "* || "$text" == *"--min-hold "* ]] ||
				fail "exec -n without --every or --min-hold: $l"
		fi
	done < <(doc_cron_lines)
	[[ $n -ge 4 ]] || fail "only $n crontab lines found"
}

@test "quickstart: exec -n that ends at once without --min-hold warns once, naming the remedy" {
	run --separate-stderr rlock exec -n job -- true
	assert_success
	[[ "$stderr" == "rlock: warning: job: the command ended "*"--min-hold 30s"*"--min-hold 0"* ]] ||
		fail "stderr: $stderr"
	[[ $(printf '%s\n' "$stderr" | wc -l) -eq 1 ]]
	# The command's status is still rlock's.
	run --separate-stderr rlock exec -n job -- sh -c 'exit 3'
	assert_failure 3
	[[ "$stderr" == *"--min-hold"* ]]
}

@test "quickstart: no warning with --min-hold (even 0, or from the config file), with a wait, or with -q" {
	local conf="$BATS_TEST_TMPDIR/c.conf"
	printf 'min-hold = 1s\n' >"$conf"
	for args in "--min-hold 0 exec -n" "exec -n --min-hold 200ms" "exec -w 5s" \
		"exec -n --every 1s" \
		"-q exec -n" "--config $conf exec -n" "exec"; do
		rcli DEL 'rlock:{job}' >/dev/null
		# shellcheck disable=SC2086
		run --separate-stderr rlock $args job -- true
		assert_success
		[[ -z "$stderr" ]] || fail "rlock $args: $stderr"
	done
}

# runnable_by_nobody: skip, saying why, when user 65534 cannot run rlock
# (a build tree in a 0700 directory, a home directory others may not
# enter): the test is about what that user may read, not about the tree.
runnable_by_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups env "$RLOCK" --version \
		>/dev/null 2>&1 ||
		skip "user 65534 cannot run $RLOCK (a directory above it is closed to others)"
}

@test "quickstart: a password file the user may not read is exit 77 with the remedy, not a usage error" {
	[[ $(id -u) -eq 0 ]] || skip "needs root to run as another user"
	runnable_by_nobody
	local pw
	public_dir
	pw="$PUBDIR/pw"
	printf 'x\n' >"$pw"
	chmod 600 "$pw"
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$RLOCK" --password-file "$pw" status job
	assert_failure 77
	[[ "$stderr" == "rlock: cannot read --password-file $pw: Permission denied"*"chmod 640"* ]] ||
		fail "stderr: $stderr"
	[[ $(printf '%s\n' "$stderr" | wc -l) -eq 1 ]]
	# The same for the config file, and a missing file stays a usage error.
	cp "$pw" "$PUBDIR/conf"
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$RLOCK" --config "$PUBDIR/conf" status job
	assert_failure 77
	run --separate-stderr rlock --password-file "$BATS_TEST_TMPDIR/none" status job
	assert_failure 64
}

@test "quickstart: a job of a user in the password file's group (0640) takes the lock" {
	[[ $(id -u) -eq 0 ]] || skip "needs root to run as another user"
	runnable_by_nobody
	local pw gid=$((40000 + RANDOM % 20000))
	start_redis_auth_as AUTH s3cret
	public_dir
	pw="$PUBDIR/rlock.password"
	printf 's3cret\n' >"$pw"
	chown "0:$gid" "$pw"
	chmod 640 "$pw"
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --groups "$gid" \
		env -i PATH=/usr/bin:/bin LOGNAME=alice "$RLOCK" -u "$AUTH_URL" \
		--password-file "$pw" exec -n --min-hold 0 job -- true
	assert_success
	assert_equal "$stderr" ""
	# A user outside the group is told how to fix it.
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$RLOCK" -u "$AUTH_URL" --password-file "$pw" status job
	assert_failure 77
}

@test "quickstart: rlock help [COMMAND] prints what --help does, with no server or config" {
	local want
	want=$(rlock --help)
	RLOCK_CONFIG=/nonexistent/rlock.conf run --separate-stderr rlock help
	assert_success
	assert_output "$want"
	want=$(rlock exec --help)
	run --separate-stderr rlock help exec
	assert_success
	assert_output "$want"
	[[ $(rlock --help) == *"help [COMMAND]"* ]]
	run --separate-stderr rlock help nosuch
	assert_failure 64
	[[ "$stderr" == "rlock: unknown command 'nosuch'; commands are: "*help* ]]
	run --separate-stderr rlock help exec status
	assert_failure 64
}

# What rlock prints, of every kind the docs show, into $1.
real_output() {
	local i pids=() out=$1
	{
		rlock acquire -t 15m deploy >/dev/null
		rlock acquire --json -t 30s job
		rlock status deploy
		rlock status --json deploy
		rlock exec -t 30s report -- sh -c 'exit 0'
		rlock acquire -t 30s other | xargs -I{} "$RLOCK" release --token {} other
		rlock status other || true
		rlock status --json other || true
		rlock status new || true
		# A holder that expires, then a new one: "expired" in the history.
		rlock acquire -t 100ms report >/dev/null
		for ((i = 0; i < 250; i++)); do
			rlock status report >/dev/null || break
			sleep 0.02
		done
		rlock acquire -t 30s report >/dev/null
		rlock release --force report
		rlock log report
		rlock log --json report
		# A holder with a command, and a waiter behind it.
		"$RLOCK" exec -t 30s held -- sleep 30 &
		pids+=("$!")
		wait_held held
		"$RLOCK" exec -t 30s -w 30s held -- true &
		pids+=("$!")
		wait_waiting
		rlock status held
		rlock --json status held
		# A semaphore, a shared lock, the listing.
		rlock acquire --limit 3 -t 30s sem >/dev/null
		rlock acquire --limit 3 -t 30s sem >/dev/null
		rlock status sem
		rlock status --json sem
		rlock acquire --shared -t 30s cache >/dev/null
		rlock acquire --shared -t 30s cache >/dev/null
		rlock status cache
		rlock status --json cache
		rlock status
		rlock --json status
		# A name run with --every: its schedule, free and in the listing.
		rlock exec --every 1h report -- true
		rlock status report || true
		rlock --json status report || true
		rlock status
		rlock --json status
		# Quorum: three servers, one of them down.
		rlock -u "$RLOCK_URL $Q1_URL redis://127.0.0.1:1" acquire -n -t 30s qjob >/dev/null
		rlock -u "$RLOCK_URL $Q1_URL redis://127.0.0.1:1" status qjob || true
		rlock -u "$RLOCK_URL $Q1_URL redis://127.0.0.1:1" --json status qjob || true
		rlock -u "$RLOCK_URL $Q1_URL $Q2_URL" acquire --shared -t 30s qcache >/dev/null
		rlock -u "$RLOCK_URL $Q1_URL $Q2_URL" acquire --shared -t 30s qcache >/dev/null
		rlock -u "$RLOCK_URL $Q1_URL $Q2_URL" status qcache
		# Verbose lines, text and JSON; doctor, reachable or not.
		rlock -v exec -t 1s x -- true 2>&1
		rlock --json -v exec -t 1s x -- true 2>&1
		rlock doctor 2>/dev/null || true
		rlock -u redis://127.0.0.1:1 doctor 2>/dev/null || true
		# A server that wants a password (auth ok).
		if [[ -n "${QA_URL:-}" ]]; then
			RLOCK_PASSWORD=qa-pw rlock -u "$QA_URL" doctor 2>/dev/null || true
		fi
		kill "${pids[0]}"
		bg_wait "${pids[0]}" 10000
		bg_wait "${pids[1]}" 10000
	} >"$out" 2>/dev/null
}

@test "quickstart: every example of output in the README and the manual is shaped like rlock's real output" {
	start_redis_as Q1
	start_redis_as Q2
	start_redis_auth_as QA qa-pw
	real_output "$BATS_TEST_TMPDIR/real"
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/docshape.py" "$BATS_TEST_TMPDIR/real" \
		"$TOP/README.md" "$TOP/man/rlock.1" "$TOP/man/rlock.conf.5" "$TOP"/man/rlock*.7
	echo "$output"
	assert_success
	[[ "$output" =~ ([0-9]+)\ examples\ checked ]]
	[[ ${BASH_REMATCH[1]} -ge 30 ]]
}

@test "quickstart: a fence shown in the docs is as large as a real one" {
	local real
	real=$(rlock acquire --json -t 5s f | sed 's/.*"fence":\([0-9]*\).*/\1/')
	[[ ${#real} -ge 13 ]] || fail "a real fence: $real"
	run grep -nE 'fence"?:? ?[0-9]{1,12}\b' "$TOP/README.md" "$TOP/man/rlock.1" "$TOP/man/rlock.conf.5" "$TOP"/man/rlock*.7
	assert_output ""
}

@test "quickstart: the repository's top has a LICENSE with the ISC terms debian/copyright states, shipped in the tarball" {
	[[ -f "$TOP/LICENSE" ]] || fail "no LICENSE at the top of the repository"
	grep -q '^ISC License$' "$TOP/LICENSE" || fail "LICENSE does not name the ISC license"
	grep -q '^EXTRA_DIST = .*LICENSE' "$TOP/Makefile.am" || fail "Makefile.am does not ship LICENSE"
	# The terms, word for word, as debian/copyright has them (in the
	# repository: the release tarball, which the sanitizer run tests,
	# does not ship debian/).
	[[ -f "$TOP/debian/copyright" ]] || return 0
	local terms
	terms=$(sed -n '/^License: ISC$/,$p' "$TOP/debian/copyright" | sed -n '/^ Permission/,$p' |
		sed 's/^ //; s/^\.$//')
	[[ -n $terms ]] || fail "debian/copyright has no ISC terms"
	assert_equal "$(sed -n '/^Permission/,$p' "$TOP/LICENSE")" "$terms"
}

@test "quickstart: no hand-written C file of src/ is much over 1,000 lines (split by reason to change: the README's source layout)" {
	local f n over=
	for f in "$TOP"/src/*.c; do
		[[ $f == */scripts.c ]] && continue	# generated from src/lua
		n=$(wc -l <"$f")
		((n <= 1100)) || over+=" ${f##*/}($n)"
	done
	[[ -z $over ]] || fail "files:$over"
}
