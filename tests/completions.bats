#!/usr/bin/env bats
# completions.bats: the bash, zsh and fish completions in completions/, driven
# through the real shells. Options are compared with what `rlock ... --help`
# lists, so these tests follow the binary. A shell that is not installed is
# skipped; the lock-name tests start a private redis-server of their own.

load helpers
load completion-helpers

setup() {
	unset RLOCK_URL RLOCK_TOKEN RLOCK_PREFIX RLOCK_PASSWORD REDISCLI_AUTH RLOCK_CONFIG
}

teardown() { cleanup_test; }

# Two held locks, 'alpha' and 'beta', on a private server that RLOCK_URL
# names, with the binary under test on $PATH as `rlock`.
hold_alpha_and_beta() {
	require_rlock
	start_redis
	rlock acquire -t 5m alpha >/dev/null
	rlock acquire -t 5m beta >/dev/null
	put_rlock_on_path
}

# ---------------------------------------------------------------------------
# bash
# ---------------------------------------------------------------------------

@test "bash: sourcing completions/rlock registers _rlock as the completion of rlock" {
	local mode lib
	for mode in $(bash_modes); do
		lib=""
		[[ $mode == lib ]] && lib=$BASH_COMPLETION_LIB
		run bash --norc --noprofile -c '
			if [[ -n $1 ]]; then source "$1" || exit 3; fi
			source "$2" || exit 3
			complete -p rlock' bash "$lib" "$COMPLETIONS_DIR/rlock"
		assert_success
		assert_output "complete -F _rlock rlock"
	done
}

@test "bash: the completion file is valid bash syntax" {
	run bash -n "$COMPLETIONS_DIR/rlock"
	assert_success
	run grep -c '^_rlock()' "$COMPLETIONS_DIR/rlock"
	assert_output 1
}

@test "bash: 'rlock ' offers exactly the ten commands" {
	local mode out
	for mode in $(bash_modes); do
		out=$(bash_complete "$mode" "rlock ") || fail "bash ($mode) failed"
		assert_offers_exactly "bash ($mode): rlock " "$out" "${RLOCK_COMMANDS[@]}"
	done
}

@test "bash: 'rlock ac' completes to acquire" {
	local mode out
	for mode in $(bash_modes); do
		out=$(bash_complete "$mode" "rlock ac") || fail "bash ($mode) failed"
		assert_offers_exactly "bash ($mode): rlock ac" "$out" acquire
	done
}

@test "bash: 'rlock do' completes to doctor and 'rlock e' to extend and exec" {
	local mode out
	for mode in $(bash_modes); do
		out=$(bash_complete "$mode" "rlock do") || fail "bash ($mode) failed"
		assert_offers_exactly "bash ($mode): rlock do" "$out" doctor
		out=$(bash_complete "$mode" "rlock e") || fail "bash ($mode) failed"
		assert_offers_exactly "bash ($mode): rlock e" "$out" extend exec
	done
}

@test "bash: 'rlock acquire --' offers exactly the long options of 'rlock acquire --help'" {
	require_rlock
	local mode out want
	want=$(help_long_options acquire) || fail "cannot parse 'rlock acquire --help'"
	for mode in $(bash_modes); do
		out=$(bash_complete "$mode" "rlock acquire --") || fail "bash ($mode) failed"
		# shellcheck disable=SC2086
		assert_offers_exactly "bash ($mode): rlock acquire --" "$out" $want
	done
}

@test "bash: 'rlock CMD --' offers exactly the long options of 'rlock CMD --help' for every command" {
	require_rlock
	local mode cmd out want
	for cmd in "${RLOCK_COMMANDS[@]}"; do
		want=$(help_long_options "$cmd") || fail "cannot parse 'rlock $cmd --help'"
		for mode in $(bash_modes); do
			out=$(bash_complete "$mode" "rlock $cmd --") || fail "bash ($mode) failed"
			# shellcheck disable=SC2086
			assert_offers_exactly "bash ($mode): rlock $cmd --" "$out" $want
		done
	done
}

@test "bash: 'rlock CMD -' offers every short option of 'rlock CMD --help' for every command" {
	require_rlock
	local mode cmd out want
	for cmd in "${RLOCK_COMMANDS[@]}"; do
		want=$(help_short_options "$cmd") || fail "cannot parse 'rlock $cmd --help'"
		for mode in $(bash_modes); do
			out=$(bash_complete "$mode" "rlock $cmd -") || fail "bash ($mode) failed"
			# shellcheck disable=SC2086
			assert_offers "bash ($mode): rlock $cmd -" "$out" $want
		done
	done
}

@test "bash: 'rlock --' before the command offers exactly the global options of 'rlock --help'" {
	require_rlock
	local mode out want
	want=$(help_long_options) || fail "cannot parse 'rlock --help'"
	for mode in $(bash_modes); do
		out=$(bash_complete "$mode" "rlock --") || fail "bash ($mode) failed"
		# shellcheck disable=SC2086
		assert_offers_exactly "bash ($mode): rlock --" "$out" $want
	done
}

@test "bash: 'rlock exec --on-lost ' offers signal names, TERM and ignore among them" {
	local mode out
	for mode in $(bash_modes); do
		out=$(bash_complete "$mode" "rlock exec --on-lost ") || fail "bash ($mode) failed"
		assert_offers "bash ($mode): rlock exec --on-lost " "$out" TERM INT HUP KILL ignore
		out=$(bash_complete "$mode" "rlock exec --on-lost U") || fail "bash ($mode) failed"
		assert_offers_exactly "bash ($mode): rlock exec --on-lost U" "$out" USR1 USR2
	done
}

@test "bash: every --on-lost value offered is one that rlock accepts" {
	require_rlock
	local out sig port
	out=$(bash_complete plain "rlock exec --on-lost ") || fail "bash failed"
	[[ -n $out ]] || fail "no --on-lost values offered"
	port=$(free_port)
	for sig in $out; do
		# A bad value is a usage error (64) before any connection is tried;
		# a good one gets as far as failing to connect.
		run --separate-stderr rlock -u "redis://127.0.0.1:$port" \
			--connect-timeout 200ms exec --on-lost "$sig" job true
		if [[ $status == 64 ]]; then
			fail "rlock rejects --on-lost '$sig' offered by the completion: $stderr"
		fi
	done
}

@test "bash: '--password-file ' and '--tls-ca ' offer the file names in the current directory" {
	local mode out opt dir
	dir=$(completion_scratch_dir)
	touch "$dir/secret.pw" "$dir/ca.pem"
	mkdir "$dir/certs"
	for mode in $(bash_modes); do
		for opt in --password-file --tls-ca; do
			out=$(bash_complete "$mode" "rlock $opt ") || fail "bash ($mode) failed"
			assert_offers_exactly "bash ($mode): rlock $opt " "$out" ca.pem certs secret.pw
			out=$(bash_complete "$mode" "rlock $opt ca") || fail "bash ($mode) failed"
			assert_offers_exactly "bash ($mode): rlock $opt ca" "$out" ca.pem
		done
		out=$(bash_complete "$mode" "rlock acquire --tls-ca ") || fail "bash ($mode) failed"
		assert_offers_exactly "bash ($mode): rlock acquire --tls-ca " "$out" ca.pem certs secret.pw
	done
}

@test "bash: 'rlock exec job ' offers command names such as ls, not rlock's commands" {
	local mode out
	for mode in $(bash_modes); do
		out=$(bash_complete "$mode" "rlock exec job ") || fail "bash ($mode) failed"
		assert_offers "bash ($mode): rlock exec job " "$out" ls sh
		if grep -qxF acquire <<<"$out"; then
			fail "bash ($mode): 'rlock exec job ' offers rlock's own command 'acquire'"
		fi
		out=$(bash_complete "$mode" "rlock exec job l") || fail "bash ($mode) failed"
		assert_offers "bash ($mode): rlock exec job l" "$out" ls
		out=$(bash_complete "$mode" "rlock exec -t 10s job -- ") || fail "bash ($mode) failed"
		assert_offers "bash ($mode): rlock exec -t 10s job -- " "$out" ls
	done
}

@test "bash: 'rlock release ' and 'rlock status ' offer the names of held locks from RLOCK_URL" {
	hold_alpha_and_beta
	local mode out line
	for mode in $(bash_modes); do
		for line in "rlock release " "rlock status " "rlock extend " "rlock status alpha "; do
			out=$(bash_complete "$mode" "$line") || fail "bash ($mode) failed"
			assert_offers_exactly "bash ($mode): $line" "$out" alpha beta
		done
		out=$(bash_complete "$mode" "rlock release a") || fail "bash ($mode) failed"
		assert_offers_exactly "bash ($mode): rlock release a" "$out" alpha
	done
}

@test "bash: without RLOCK_URL, lock names are not looked up" {
	hold_alpha_and_beta
	unset RLOCK_URL
	local mode out
	for mode in $(bash_modes); do
		out=$(bash_complete "$mode" "rlock release ") || fail "bash ($mode) failed"
		assert_equal "$out" ""
	done
	# ...while with it, they are: the test above is not vacuous.
	export RLOCK_URL="redis://127.0.0.1:$REDIS_PORT"
	out=$(bash_complete plain "rlock release ") || fail "bash failed"
	assert_offers_exactly "bash: rlock release " "$out" alpha beta
}

# ---------------------------------------------------------------------------
# zsh
# ---------------------------------------------------------------------------

@test "zsh: the completion file passes zsh -n and declares #compdef rlock" {
	require_shell zsh
	run zsh -n "$COMPLETIONS_DIR/_rlock"
	assert_success
	run head -1 "$COMPLETIONS_DIR/_rlock"
	assert_output "#compdef rlock"
}

@test "zsh: compinit makes _rlock the completion for rlock" {
	require_shell zsh
	run zsh_run 'print -r -- $_comps[rlock]'
	assert_success
	assert_output _rlock
}

@test "zsh: 'rlock ac<TAB>' offers acquire" {
	require_shell zsh
	local out
	out=$(zsh_complete "rlock ac") || fail "zsh driver failed"
	assert_offers_exactly "zsh: rlock ac" "$out" acquire
}

@test "zsh: 'rlock <TAB>' offers exactly the ten commands" {
	require_shell zsh
	local out
	out=$(zsh_complete "rlock ") || fail "zsh driver failed"
	assert_offers_exactly "zsh: rlock " "$out" "${RLOCK_COMMANDS[@]}"
}

@test "zsh: 'rlock acquire --<TAB>' offers --ttl and --wait" {
	require_shell zsh
	local out
	out=$(zsh_complete "rlock acquire --") || fail "zsh driver failed"
	assert_offers "zsh: rlock acquire --" "$out" --ttl --wait
}

@test "zsh: 'rlock acquire --<TAB>' offers exactly the long options of 'rlock acquire --help'" {
	require_shell zsh
	require_rlock
	local out want
	want=$(help_long_options acquire) || fail "cannot parse 'rlock acquire --help'"
	out=$(zsh_complete "rlock acquire --") || fail "zsh driver failed"
	# shellcheck disable=SC2086
	assert_offers_exactly "zsh: rlock acquire --" "$out" $want
}

@test "zsh: 'rlock exec --on-lost <TAB>' offers signal names, TERM and ignore among them" {
	require_shell zsh
	local out
	out=$(zsh_complete "rlock exec --on-lost ") || fail "zsh driver failed"
	assert_offers "zsh: rlock exec --on-lost " "$out" TERM INT HUP KILL ignore
}

@test "zsh: 'rlock release <TAB>' offers the names of held locks from RLOCK_URL" {
	require_shell zsh
	hold_alpha_and_beta
	local out
	out=$(zsh_complete "rlock release ") || fail "zsh driver failed"
	assert_offers_exactly "zsh: rlock release " "$out" alpha beta
}

# ---------------------------------------------------------------------------
# fish
# ---------------------------------------------------------------------------

@test "fish: 'rlock ac' completes to acquire" {
	require_shell fish
	local out
	out=$(fish_complete "rlock ac") || fail "fish failed"
	assert_offers_exactly "fish: rlock ac" "$out" acquire
}

@test "fish: 'rlock do' completes to doctor" {
	require_shell fish
	local out
	out=$(fish_complete "rlock do") || fail "fish failed"
	assert_offers_exactly "fish: rlock do" "$out" doctor
}

@test "fish: 'rlock ' offers exactly the ten commands" {
	require_shell fish
	local out
	out=$(fish_complete "rlock ") || fail "fish failed"
	assert_offers_exactly "fish: rlock " "$out" "${RLOCK_COMMANDS[@]}"
}

@test "fish: 'rlock acquire --' offers exactly the long options of 'rlock acquire --help'" {
	require_shell fish
	require_rlock
	local out want
	want=$(help_long_options acquire) || fail "cannot parse 'rlock acquire --help'"
	out=$(fish_complete "rlock acquire --") || fail "fish failed"
	# shellcheck disable=SC2086
	assert_offers_exactly "fish: rlock acquire --" "$out" $want
}

@test "fish: 'rlock CMD --' offers exactly the long options of 'rlock CMD --help' for every command" {
	require_shell fish
	require_rlock
	local cmd out want
	for cmd in "${RLOCK_COMMANDS[@]}"; do
		want=$(help_long_options "$cmd") || fail "cannot parse 'rlock $cmd --help'"
		out=$(fish_complete "rlock $cmd --") || fail "fish failed"
		# shellcheck disable=SC2086
		assert_offers_exactly "fish: rlock $cmd --" "$out" $want
	done
}

@test "fish: 'rlock exec --on-lost ' offers signal names, TERM and ignore among them" {
	require_shell fish
	local out
	out=$(fish_complete "rlock exec --on-lost ") || fail "fish failed"
	assert_offers "fish: rlock exec --on-lost " "$out" TERM INT HUP KILL ignore
}

@test "fish: 'rlock release ' offers the names of held locks from RLOCK_URL" {
	require_shell fish
	hold_alpha_and_beta
	local out
	out=$(fish_complete "rlock release ") || fail "fish failed"
	assert_offers_exactly "fish: rlock release " "$out" alpha beta
}

@test "completions: 'rlock help ' offers the commands, in bash, zsh and fish" {
	local mode out want=(acquire release extend status exec log watch doctor schedule)
	for mode in $(bash_modes); do
		out=$(bash_complete "$mode" "rlock help ") || fail "bash ($mode) failed"
		assert_offers_exactly "bash ($mode): rlock help " "$out" "${want[@]}"
	done
	require_shell zsh
	out=$(zsh_complete "rlock help ") || fail "zsh failed"
	assert_offers_exactly "zsh: rlock help " "$out" "${want[@]}"
	require_shell fish
	out=$(fish_complete "rlock help ") || fail "fish failed"
	assert_offers_exactly "fish: rlock help " "$out" "${want[@]}"
}
