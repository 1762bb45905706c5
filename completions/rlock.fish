# fish completion for rlock(1)

set -l commands acquire release extend status exec log watch doctor schedule help

# Held lock names, asked of the server only when RLOCK_URL names one: a
# completion must never hang on, or guess at, a Redis that is not there.
function __rlock_names
    set -q RLOCK_URL; or return
    set -l rlock (commandline -opc)[1]
    # "NAME: held by ...": names may contain ':' but never a space.
    timeout 2 $rlock status 2>/dev/null | string replace -rf -- '^(\S+): held by .*$' '$1'
end

# In "rlock exec NAME COMMAND [ARG...]", print the command's words up to
# the one being completed and succeed; fail anywhere else (before the
# command, or with -c).  The command is the first word after NAME that is
# not an option, or the word after "--".
function __rlock_exec_argv
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmd
    set -l nargs 0
    set -l skip 0
    set -l dashdash 0
    set -l i 0
    for t in $tokens
        set i (math $i + 1)
        if test $skip -eq 1
            set skip 0
            continue
        end
        if test $dashdash -eq 0
            switch $t
                case --
                    test "$cmd" = exec; and set dashdash 1
                    continue
                case -c --command '--command=*'
                    test "$cmd" = exec; and return 1
                    continue
                case -u --url --password-file --sentinel-user --sentinel-password-file --prefix --connect-timeout --timeout -t --ttl -w --wait -E --conflict-exit-code --token --heartbeat --on-lost --kill-after --max-runtime --leftovers --reason --record --label --pid --min-hold --every --splay --wait-replicas --limit --tls-ca --tls-cert --tls-key --tls-server-name --config
                    set skip 1
                    continue
                case '-*'
                    continue
            end
        end
        if test -z "$cmd"
            set cmd $t
            test "$cmd" = exec; or return 1
        else if test $nargs -ge 1
            printf '%s\n' $tokens[$i..-1] (commandline -ct)
            return 0
        else
            set nargs 1
        end
    end
    test "$cmd" = exec; and test $nargs -ge 1; and test $skip -eq 0; or return 1
    set -l cur (commandline -ct)
    if test $dashdash -eq 1; or not string match -q -- '-*' "$cur"
        printf '%s\n' "$cur"
        return 0
    end
    return 1
end

# Complete the command of exec: its name, then its own arguments.
function __rlock_exec_complete
    set -l argv (__rlock_exec_argv)
    if test (count $argv) -le 1
        __fish_complete_command
    else
        __fish_complete_subcommand --commandline $argv
    end
end

function __rlock_not_in_exec_command
    not __rlock_exec_argv >/dev/null
end

complete -c rlock -f

# Commands
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a acquire -d 'Take the lock and print its token'
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a release -d 'Give the lock back (owner only, or --force)'
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a extend -d "Push the lock's expiry out (owner only)"
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a status -d 'Show who holds the locks'
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a exec -d 'Run a command (or -c STRING) while holding the lock'
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a log -d "Show the locks' history"
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a watch -d "Follow the locks' events as they happen"
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a doctor -d 'Check the servers for settings that break locks'
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a schedule -d 'Declare, list, pause, resume or remove a schedule'
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a help -d "Show the help, or a command's (as COMMAND --help)"
complete -c rlock -n "__fish_seen_subcommand_from help" -a "acquire release extend status exec log watch doctor schedule"

# Global options: valid before and after the command word (but not among
# the words of the command that exec runs)
complete -c rlock -n __rlock_not_in_exec_command -s u -l url -x -d 'Redis to use (default $RLOCK_URL, else redis://127.0.0.1:6379)'
complete -c rlock -n __rlock_not_in_exec_command -l password-file -r -F -d "Read the password from FILE's first line"
complete -c rlock -n __rlock_not_in_exec_command -l sentinel-user -x -d 'The user the sentinels of a redis-sentinel:// URL know'
complete -c rlock -n __rlock_not_in_exec_command -l sentinel-password-file -r -F -d "Read the sentinels' own password from FILE's first line"
complete -c rlock -n __rlock_not_in_exec_command -l prefix -x -d 'Key prefix (default $RLOCK_PREFIX, else rlock:)'
complete -c rlock -n __rlock_not_in_exec_command -l connect-timeout -x -d 'Bound on connecting and authenticating (default 2s)'
complete -c rlock -n __rlock_not_in_exec_command -l timeout -x -d 'Bound on one Redis round trip (default 2s)'
complete -c rlock -n __rlock_not_in_exec_command -l json -d 'Machine-readable output on stdout'
complete -c rlock -n __rlock_not_in_exec_command -s q -l quiet -d 'Only errors on stderr'
complete -c rlock -n __rlock_not_in_exec_command -s v -l verbose -d 'Timestamped progress on stderr'
complete -c rlock -n __rlock_not_in_exec_command -s h -l help -d 'Show help and exit'
complete -c rlock -n __rlock_not_in_exec_command -s V -l version -d 'Show the version and exit'
complete -c rlock -n __rlock_not_in_exec_command -l tls-ca -r -F -d 'Verify rediss:// servers against this CA (default: system store)'
complete -c rlock -n __rlock_not_in_exec_command -l tls-cert -r -F -d 'Client certificate for TLS'
complete -c rlock -n __rlock_not_in_exec_command -l tls-key -r -F -d 'Private key of --tls-cert'
complete -c rlock -n __rlock_not_in_exec_command -l tls-server-name -x -a '(__fish_print_hostnames)' -d "Name the server's certificate must carry (default: the URL's host)"
complete -c rlock -n __rlock_not_in_exec_command -l tls-insecure -d "Do not verify the server's certificate (testing only)"
complete -c rlock -n __rlock_not_in_exec_command -l syslog -d 'Also log errors and notable events to syslog (daemon facility)'
complete -c rlock -n __rlock_not_in_exec_command -l config -r -F -d 'Read settings from FILE (default $RLOCK_CONFIG, else /etc/rlock.conf)'

# acquire
complete -c rlock -n '__fish_seen_subcommand_from acquire' -s t -l ttl -x -d 'Lock expiry (default 30s)'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -s w -l wait -x -d 'Wait at most DUR for a busy lock; 0: do not wait (default: forever)'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -s n -l no-wait -d 'Same as --wait 0'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l fifo -d 'Wait in line: waiters get the lock in the order they came'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l no-replace -d "A newcomer's --replace waits for this hold"
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l limit -x -d 'A semaphore: up to N holders at once, each with its own token'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -s s -l shared -d 'A shared (reader) hold: many at once, but never with an exclusive one'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -s E -l conflict-exit-code -x -d 'Exit status when the lock stays busy (default 1)'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l token -x -d 'Use TOKEN instead of a random one'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l hold -d 'Leave a keeper that holds the lock while the caller (or --pid) lives'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l splay -x -d 'First sleep a random time below DUR (spread a fleet'"'"'s starts)'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l pid -x -a '(__fish_complete_pids)' -d 'With --hold: keep the lock while process PID lives, not the caller'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l on-lost -x -a 'TERM INT HUP QUIT KILL USR1 USR2 ignore' -d 'With --hold: signal for the owner if the lock is lost (default TERM)'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l wait-replicas -x -d 'After each write, wait (up to --timeout) for N replicas to have it'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l no-history -d 'Write no history for this run (see rlock log)'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l history-length -x -d "Events kept in each lock's history (default 100; 0: none)"
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l history-expiry -x -d "Drop a lock's history DUR after its last event (default 30d)"

# release
complete -c rlock -n '__fish_seen_subcommand_from release' -l token -x -d "The owner's token (default \$RLOCK_TOKEN)"
complete -c rlock -n '__fish_seen_subcommand_from release' -l force -d 'Delete the lock whoever holds it, and say whose it was'
complete -c rlock -n '__fish_seen_subcommand_from release' -l reason -x -d 'What the history says of this release (default: by rlock release)'
complete -c rlock -n '__fish_seen_subcommand_from release' -l no-history -d 'Write no history for this run (see rlock log)'
complete -c rlock -n '__fish_seen_subcommand_from release' -l history-length -x -d "Events kept in each lock's history (default 100; 0: none)"
complete -c rlock -n '__fish_seen_subcommand_from release' -l history-expiry -x -d "Drop a lock's history DUR after its last event (default 30d)"

# status, log
complete -c rlock -n '__fish_seen_subcommand_from status' -l format -x -a 'text json openmetrics' -d 'Text (default), json (as --json) or openmetrics (Prometheus)'
complete -c rlock -n '__fish_seen_subcommand_from status' -l overdue -d 'Only names run with --every that missed a start; exit 1 if any'
complete -c rlock -n '__fish_seen_subcommand_from status' -l failing -d 'Only schedules whose last run failed; exit 1 if any'

# schedule
complete -c rlock -n '__fish_seen_subcommand_from schedule; and not __fish_seen_subcommand_from declare list pause resume remove' -x -a 'declare list pause resume remove'
complete -c rlock -n '__fish_seen_subcommand_from schedule' -l every -x -d "Declare: the schedule's period"
complete -c rlock -n '__fish_seen_subcommand_from schedule' -l cron -x -d "Declare: the schedule's crontab(5) expression"
complete -c rlock -n '__fish_seen_subcommand_from schedule' -l cron-tz -x -d "--cron's time zone, as CRON_TZ (default: the machine's)"
complete -c rlock -n '__fish_seen_subcommand_from schedule' -l grace -x -d "How late a slot's start may come before it is overdue (default: half the period)"
complete -c rlock -n '__fish_seen_subcommand_from schedule' -l for -x -d 'Pause for DUR (default: until resumed)'
complete -c rlock -n '__fish_seen_subcommand_from schedule' -l overdue -d 'List: only overdue schedules; exit 1 if any'
complete -c rlock -n '__fish_seen_subcommand_from schedule' -l failing -d 'List: only failing schedules; exit 1 if any'
complete -c rlock -n '__fish_seen_subcommand_from log' -s n -l count -x -d 'Show the newest N events of each lock (default 20)'
complete -c rlock -n '__fish_seen_subcommand_from log' -l since -x -d 'Show only events of the last DUR'

# extend
complete -c rlock -n '__fish_seen_subcommand_from extend' -s t -l ttl -x -d 'New time to live from now (default: as acquired)'
complete -c rlock -n '__fish_seen_subcommand_from extend' -l token -x -d "The owner's token (default \$RLOCK_TOKEN)"
complete -c rlock -n '__fish_seen_subcommand_from extend' -l wait-replicas -x -d 'After each write, wait (up to --timeout) for N replicas to have it'

# exec: its options up to the command, then the command's own completions
set -l exec_opt '__fish_seen_subcommand_from exec; and __rlock_not_in_exec_command'
complete -c rlock -n $exec_opt -s t -l ttl -x -d 'Lock expiry (default 30s)'
complete -c rlock -n $exec_opt -s w -l wait -x -d 'Wait at most DUR for a busy lock; 0: do not wait (default: forever)'
complete -c rlock -n $exec_opt -s n -l no-wait -d 'Same as --wait 0'
complete -c rlock -n $exec_opt -l fifo -d 'Wait in line: waiters get the lock in the order they came'
complete -c rlock -n $exec_opt -l pending -x -d 'Newest waiter wins: at most N wait; a newer one supersedes the oldest (exit 36)'
complete -c rlock -n $exec_opt -l replace -d 'Stop the running holder (it exits 37), then run'
complete -c rlock -n $exec_opt -l no-replace -d "A newcomer's --replace waits for this run"
complete -c rlock -n $exec_opt -l limit -x -d 'A semaphore: up to N holders at once, each with its own token'
complete -c rlock -n $exec_opt -s s -l shared -d 'A shared (reader) hold: many at once, but never with an exclusive one'
complete -c rlock -n $exec_opt -s E -l conflict-exit-code -x -d 'Exit status when the lock stays busy (default 1)'
complete -c rlock -n $exec_opt -l token -x -d 'Take the lock with TOKEN instead of a random one'
complete -c rlock -n $exec_opt -l heartbeat -x -d 'Extend the lock this often while the command runs (default TTL/3)'
complete -c rlock -n $exec_opt -l on-lost -x -a 'TERM INT HUP QUIT KILL USR1 USR2 ignore' -d 'Signal for the command if the lock is lost (default TERM)'
complete -c rlock -n $exec_opt -l kill-after -x -d 'Then SIGKILL if it is still running after DUR (default 10s)'
complete -c rlock -n $exec_opt -l max-runtime -x -d "Stop the command after DUR (--on-lost's signal), release, exit 124"
complete -c rlock -n $exec_opt -l leftovers -x -a 'wait kill leave' -d 'What the command left running: wait (keep the lock until it ends; the default), kill (stop it, then release) or leave (release)'
complete -c rlock -n $exec_opt -l record -x -a 'name full none' -d 'What status and the history keep of the command: name (its first word, the default), full (its words, URL passwords masked) or none'
complete -c rlock -n $exec_opt -l label -x -d 'Record TEXT instead of the command (see --record)'
complete -c rlock -n $exec_opt -l foreground -d "Run the command in rlock's process group (no guard, no terminal hand-over)"
complete -c rlock -n $exec_opt -s c -l command -x -a '(__fish_complete_command)' -d 'Run sh -c STRING'
complete -c rlock -n $exec_opt -l min-hold -x -d 'Keep the lock at least DUR after acquiring; let it expire then'
complete -c rlock -n $exec_opt -l every -x -d 'At most one start of NAME a PERIOD, across machines'
complete -c rlock -n $exec_opt -l cron -x -d 'At most one start of NAME at each time of a crontab(5) expression, across machines'
complete -c rlock -n $exec_opt -l cron-tz -x -d "--cron's time zone, as CRON_TZ (default: the machine's)"
complete -c rlock -n $exec_opt -l retry-failed -d 'With --every: only a run that exits 0 counts for its period'
complete -c rlock -n $exec_opt -l splay -x -d 'First sleep a random time below DUR (spread a fleet'"'"'s starts)'
complete -c rlock -n $exec_opt -l wait-replicas -x -d 'After each write, wait (up to --timeout) for N replicas to have it'
complete -c rlock -n $exec_opt -l no-history -d 'Write no history for this run (see rlock log)'
complete -c rlock -n $exec_opt -l history-length -x -d "Events kept in each lock's history (default 100; 0: none)"
complete -c rlock -n $exec_opt -l history-expiry -x -d "Drop a lock's history DUR after its last event (default 30d)"
complete -c rlock -n '__rlock_exec_argv >/dev/null' -x -a '(__rlock_exec_complete)'

# Lock names
complete -c rlock -n '__fish_seen_subcommand_from release extend status log watch; and __rlock_not_in_exec_command' -a '(__rlock_names)' -d 'Held lock'
