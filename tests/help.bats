#!/usr/bin/env bats
# help.bats: what --help prints fits a screen (40 lines, 80 columns); a
# command's help lists its own options and points to `rlock --help` for the
# global ones and to the man pages; all the helps together still name every
# option the completions offer.

load helpers
load completion-helpers

setup() {
	unset RLOCK_URL RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG
}

teardown() { cleanup_test; }

# Each command's own options (not the global ones), as the spec gives them.
declare -gA OWN_OPTIONS=(
	[acquire]="--ttl --wait --no-wait --conflict-exit-code --token --wait-replicas --fifo --limit --shared --hold --pid --on-lost --no-replace --splay --no-history --history-length --history-expiry"
	[release]="--token --force --reason --no-history --history-length --history-expiry"
	[extend]="--token --ttl --wait-replicas"
	[status]="--format --overdue --failing"
	[exec]="--ttl --wait --no-wait --conflict-exit-code --token --heartbeat --on-lost --kill-after --foreground --command --min-hold --leftovers --wait-replicas --fifo --pending --replace --no-replace --limit --max-runtime --shared --record --label --every --cron --cron-tz --retry-failed --splay --no-history --history-length --history-expiry"
	[log]="--count --since"
	[watch]=""
	[doctor]=""
	[schedule]="--every --cron --cron-tz --grace --for --overdue --failing"
	[help]=""
)
GLOBAL_ONLY="--url --password-file --sentinel-user --sentinel-password-file --prefix --connect-timeout --timeout --json --quiet --verbose --version --tls-ca --tls-cert --tls-key --tls-server-name --tls-insecure --syslog --config"

# assert_fits WHAT TEXT: at most 40 lines, none wider than 80 columns.
assert_fits() {
	local what=$1 text=$2 lines wide
	lines=$(printf '%s\n' "$text" | wc -l)
	wide=$(printf '%s\n' "$text" | awk 'length($0) > 80 { print NR": "$0 }')
	((lines <= 40)) || fail "$what: $lines lines, more than 40"
	[[ -z $wide ]] || fail "$what: lines over 80 columns:"$'\n'"$wide"
}

# The options a help lists at the start of its lines, one per line.
listed_options() {
	grep -oE '^ +(-[[:alnum:]], )?--[[:alnum:]][[:alnum:]-]*' |
		grep -oE -- '--[[:alnum:]][[:alnum:]-]*' | sort -u
}

@test "help: rlock --help and every command's --help fit in 40 lines of 80 columns" {
	require_rlock
	local cmd out
	run --separate-stderr rlock --help
	assert_success
	assert_fits "rlock --help" "$output"
	for cmd in "${RLOCK_COMMANDS[@]}"; do
		run --separate-stderr rlock "$cmd" --help
		assert_success
		assert_equal "$stderr" ""
		assert_fits "rlock $cmd --help" "$output"
		out=$output
		run --separate-stderr rlock help "$cmd"
		assert_success
		assert_equal "$output" "$out"
	done
}

@test "help: a command's help lists its own options, not the global ones, and points to them" {
	require_rlock
	local cmd opt listed want
	for cmd in "${RLOCK_COMMANDS[@]}"; do
		run --separate-stderr rlock "$cmd" --help
		assert_success
		listed=$(listed_options <<<"$output")
		want=$(printf '%s\n' ${OWN_OPTIONS[$cmd]} --help | sort -u)
		assert_equal "$listed" "$want"
		[[ ${lines[0]} == "usage: rlock [OPTIONS] $cmd"* ]] ||
			fail "rlock $cmd --help: first line: ${lines[0]}"
		assert_output --partial "'rlock --help'"
		assert_output --partial "rlock(1) OPTIONS"
		assert_output --partial "rlock(7)"
	done
}

@test "help: rlock --help lists the commands and every global option" {
	require_rlock
	local cmd listed want
	run --separate-stderr rlock --help
	assert_success
	for cmd in "${RLOCK_COMMANDS[@]}"; do
		assert_line --regexp "^  $cmd( |\$)"
	done
	listed=$(listed_options <<<"$output")
	want=$(printf '%s\n' $GLOBAL_ONLY --help | sort -u)
	assert_equal "$listed" "$want"
}

@test "help: together the helps name every option the bash, zsh and fish completions offer" {
	require_rlock
	local cmd all offered missing="" opt out
	all=$({
		"$RLOCK" --help
		for cmd in "${RLOCK_COMMANDS[@]}"; do "$RLOCK" "$cmd" --help; done
	} | listed_options)
	[[ -n $all ]] || fail "no option listed by any help"
	offered=$(bash_complete plain "rlock --") || fail "bash failed"
	for cmd in "${RLOCK_COMMANDS[@]}"; do
		out=$(bash_complete plain "rlock $cmd --") || fail "bash failed on $cmd"
		offered+=$'\n'$out
	done
	# zsh and fish: the options their files declare.
	offered+=$'\n'$(grep -oE "(^ +'|\{-[[:alnum:]]\+?,)--[[:alnum:]][[:alnum:]-]*" "$COMPLETIONS_DIR/_rlock" |
		grep -oE -- '--[[:alnum:]][[:alnum:]-]*')
	offered+=$'\n'$(grep '^complete ' "$COMPLETIONS_DIR/rlock.fish" |
		grep -oE -- ' -l [[:alnum:]][[:alnum:]-]*' | sed 's/^ -l /--/')
	for opt in $(sort -u <<<"$offered"); do
		[[ $opt == --* ]] || continue
		grep -qx -- "$opt" <<<"$all" || missing+=" $opt"
	done
	[[ -z $missing ]] || fail "offered by a completion but in no --help:$missing"
}
