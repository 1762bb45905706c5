# completion-helpers.bash: drive the real bash, zsh and fish completions of
# rlock from bats, and compare what they offer with `rlock ... --help`.
#
# Every helper prints the candidates a shell offers, one per line, sorted and
# without duplicates or descriptions, so that tests can compare them as sets.
# Each shell runs in an empty scratch directory (so that a missing completion
# cannot pass by falling back to file names) and with any installed copy of
# the rlock completion kept out of its search path, so that only the files in
# $COMPLETIONS_DIR are tested.

# The completion files under test; RLOCK_COMPLETIONS_DIR points elsewhere
# (e.g. a build tree, or a deliberately broken copy).
COMPLETIONS_DIR=$(cd "${RLOCK_COMPLETIONS_DIR:-$BATS_TEST_DIRNAME/../completions}" && pwd)
BASH_COMPLETION_LIB=/usr/share/bash-completion/bash_completion

# The ten commands of `rlock --help`, in its order.
# shellcheck disable=SC2034 # used by completions.bats
RLOCK_COMMANDS=(acquire release extend status exec log watch doctor schedule help)

# An empty directory for a shell to complete in, made fresh for each test.
completion_scratch_dir() {
	local d="$BATS_TEST_TMPDIR/cwd"
	mkdir -p "$d"
	echo "$d"
}

require_shell() {
	if ! command -v "$1" >/dev/null 2>&1; then
		skip "$1 is not installed"
	fi
}

# help_long_options CMD: the long options that `rlock CMD` takes: those its
# --help lists, and the global ones that `rlock --help` lists (a command's
# help points there instead of repeating them), one per line, sorted. With
# no CMD, those of `rlock --help`. Fails if a help lists none or lacks
# --help, so that a change in the help's layout cannot make a test pass
# vacuously.
help_long_options() {
	local opts
	opts=$({ help_listed_options -- "$@" && help_listed_options --; } |
		sort -u) || return 1
	echo "$opts"
}

# help_short_options CMD: likewise for the short options ("-t, --ttl DUR").
help_short_options() {
	local opts
	opts=$({ help_listed_options - "$@" && help_listed_options -; } |
		sort -u) || return 1
	echo "$opts"
}

# help_listed_options KIND [CMD]: the options (KIND "--": long, "-": short)
# that `rlock [CMD] --help` lists at the start of its lines, one per line.
help_listed_options() {
	local kind=$1 opts want=-h
	shift
	if [[ $kind == -- ]]; then
		opts=$("$RLOCK" "$@" --help |
			grep -oE '^ +(-[[:alnum:]], )?--[[:alnum:]][[:alnum:]-]*' |
			grep -oE -- '--[[:alnum:]][[:alnum:]-]*' | sort -u) || return 1
	else
		opts=$("$RLOCK" "$@" --help |
			grep -oE '^ +-[[:alnum:]],' | grep -oE -- '-[[:alnum:]]' |
			sort -u) || return 1
	fi
	[[ $kind == -- ]] && want=--help
	if ! grep -qx -- "$want" <<<"$opts"; then
		echo "help_listed_options: no $want in 'rlock $* --help'" >&2
		return 1
	fi
	echo "$opts"
}

# ---------------------------------------------------------------------------
# bash
# ---------------------------------------------------------------------------

# bash_complete MODE LINE: what bash completes for LINE with the cursor at its
# end. MODE is "plain" (only completions/rlock sourced) or "lib" (bash-
# completion's bash_completion loaded first). The function called is the one
# that `complete -p rlock` names, with COMP_WORDS, COMP_CWORD, COMP_LINE and
# COMP_POINT set as readline would for LINE (words split at blanks; LINE must
# hold no ':' or '=', which readline would split at too). Exits 4 when no
# completion is registered for rlock.
bash_complete() {
	local mode=$1 line=$2 lib=""
	if [[ $mode == lib ]]; then
		lib=$BASH_COMPLETION_LIB
	fi
	(cd "$(completion_scratch_dir)" && bash --norc --noprofile -c '
		lib=$1 file=$2 line=$3
		if [[ -n $lib ]]; then
			source "$lib" || exit 3
		fi
		source "$file" || exit 3
		spec=$(complete -p rlock 2>/dev/null) || {
			echo "bash_complete: no completion registered for rlock" >&2
			exit 4
		}
		[[ $spec =~ -F\ ([^ ]+) ]] || {
			echo "bash_complete: not a -F completion: $spec" >&2
			exit 4
		}
		fn=${BASH_REMATCH[1]}
		read -ra COMP_WORDS <<<"$line"
		if [[ $line == *" " ]]; then
			COMP_WORDS+=("")
		fi
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE=$line
		COMP_POINT=${#line}
		COMP_TYPE=9 COMP_KEY=9
		COMPREPLY=()
		"$fn" rlock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		if ((${#COMPREPLY[@]})); then
			printf "%s\n" "${COMPREPLY[@]}"
		fi
	' bash "$lib" "$COMPLETIONS_DIR/rlock" "$line") | sort -u
	return "${PIPESTATUS[0]}"
}

# The modes to run every bash test in; "lib" only where bash-completion is.
bash_modes() {
	echo plain
	if [[ -r $BASH_COMPLETION_LIB ]]; then
		echo lib
	fi
}

# ---------------------------------------------------------------------------
# zsh
# ---------------------------------------------------------------------------

# The driver: an interactive `zsh -f` on a pseudo-terminal (zsh/zpty) with
# completions/ first in $fpath and compinit run, compadd wrapped to record
# every match it is given, and TAB bound to a widget that runs complete-word
# and then writes a sentinel. The line is typed followed by TAB; the driver
# waits (at most 10 s) for the sentinel and prints the recorded matches.
# Usage: zsh -f -c "$ZSH_DRIVER" zsh COMPDIR OUTFILE LINE
# shellcheck disable=SC2016 # zsh code: expanded by zsh, not here
ZSH_DRIVER='
zmodload zsh/zpty || exit 3
compdir=$1 out=$2 line=$3
: >| $out
zpty z zsh -f -i || exit 3
zpty -w z "PS1= RPS1= PROMPT_EOL_MARK= out=${(q)out}"
# Keep any installed _rlock out of the way: only compdir may provide it.
zpty -w z "fpath=(${(q)compdir} \${^fpath}(N/e:\"[[ ! -e \\\$REPLY/_rlock ]]\":)); autoload -U compinit; compinit -u -d ${(q)out}.zcompdump"
zpty -w z '\''compadd() {
	if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi
	local -a __hits
	builtin compadd -A __hits "$@"
	(( $#__hits )) && print -rl -- $__hits >> $out
	builtin compadd "$@"
}'\''
zpty -w z '\''_rlock_test_tab() { zle complete-word; print -r -- "<<done>>" >> $out }; zle -N _rlock_test_tab; bindkey "^I" _rlock_test_tab'\''
zpty -w -n z "$line"$'\''\t'\''
local -i i done=0
for (( i = 0; i < 200; i++ )); do
	if grep -qx "<<done>>" $out 2>/dev/null; then done=1; break; fi
	sleep 0.05
done
zpty -d z
(( done )) || { print -u2 "zsh driver: completion did not finish"; exit 5 }
grep -vx "<<done>>" $out
exit 0
'

# zsh_complete LINE: the matches zsh offers for LINE<TAB>.
zsh_complete() {
	local line=$1
	(cd "$(completion_scratch_dir)" &&
		zsh -f -c "$ZSH_DRIVER" zsh "$COMPLETIONS_DIR" \
			"$BATS_TEST_TMPDIR/zsh-matches" "$line") | sort -u
	return "${PIPESTATUS[0]}"
}

# zsh_run SCRIPT: run SCRIPT in `zsh -f` after setting fpath and compinit as
# a user would (completions/ first in $fpath).
zsh_run() {
	(cd "$(completion_scratch_dir)" && zsh -f -c '
		fpath=($1 ${^fpath}(N/e:"[[ ! -e \$REPLY/_rlock ]]":))
		autoload -U compinit
		compinit -u -d $2
		eval $3
	' zsh "$COMPLETIONS_DIR" "$BATS_TEST_TMPDIR/zcompdump" "$1")
}

# ---------------------------------------------------------------------------
# fish
# ---------------------------------------------------------------------------

# fish_complete LINE: what `complete -C LINE` offers after sourcing
# completions/rlock.fish, descriptions cut off. Any installed rlock.fish is
# taken out of $fish_complete_path so that it cannot stand in for ours.
fish_complete() {
	local line=$1
	(cd "$(completion_scratch_dir)" &&
		XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/xdg-config" \
			XDG_DATA_HOME="$BATS_TEST_TMPDIR/xdg-data" \
			fish --no-config -c '
			set -l keep
			for d in $fish_complete_path
				test -e $d/rlock.fish; or set -a keep $d
			end
			set -g fish_complete_path $keep
			source $argv[1]; or exit 3
			complete -C $argv[2]
		' "$COMPLETIONS_DIR/rlock.fish" "$line") | cut -f1 | sort -u
	return "${PIPESTATUS[0]}"
}

# ---------------------------------------------------------------------------
# Assertions over a list of candidates (one per line, as the helpers print)
# ---------------------------------------------------------------------------

# assert_offers LABEL OFFERED WORD...: every WORD is among OFFERED.
assert_offers() {
	local label=$1 offered=$2 w missing=()
	shift 2
	for w in "$@"; do
		grep -qxF -- "$w" <<<"$offered" || missing+=("$w")
	done
	if ((${#missing[@]})); then
		batslib_print_kv_single_or_multi 8 completing "$label" \
			missing "${missing[*]}" offered "$offered" |
			batslib_decorate "completion does not offer every expected word" |
			fail
	fi
}

# assert_offers_exactly LABEL OFFERED WORD...: OFFERED is the set of WORDs.
assert_offers_exactly() {
	local label=$1 offered=$2 expected
	shift 2
	expected=$(printf '%s\n' "$@" | sort -u)
	if [[ "$offered" != "$expected" ]]; then
		batslib_print_kv_single_or_multi 8 completing "$label" \
			expected "$expected" offered "$offered" \
			"only offered" "$(comm -13 <(echo "$expected") <(echo "$offered"))" \
			"not offered" "$(comm -23 <(echo "$expected") <(echo "$offered"))" |
			batslib_decorate "completion offers a different set of words" |
			fail
	fi
}

# A directory on $PATH where `rlock` is the binary under test, for the
# completions that run `rlock status` to list lock names.
put_rlock_on_path() {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	ln -sf "$RLOCK" "$BATS_TEST_TMPDIR/bin/rlock"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH"
	export PATH
}
