# fish completion for rlock(1)

set -l commands acquire release extend status

# Held lock names, asked of the server only when RLOCK_URL names one: a
# completion must never hang on, or guess at, a Redis that is not there.
function __rlock_names
    set -q RLOCK_URL; or return
    set -l rlock (commandline -opc)[1]
    # "NAME: held by ...": names may contain ':' but never a space.
    timeout 2 $rlock status 2>/dev/null | string replace -rf -- '^(\S+): held by .*$' '$1'
end

complete -c rlock -f

# Commands
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a acquire -d 'Take the lock and print its token'
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a release -d 'Give the lock back (owner only, or --force)'
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a extend -d "Push the lock's expiry out (owner only)"
complete -c rlock -n "not __fish_seen_subcommand_from $commands" -a status -d 'Show who holds the locks'

# Global options: valid before and after the command word
complete -c rlock -s u -l url -x -d 'Redis to use (default $RLOCK_URL, else redis://127.0.0.1:6379)'
complete -c rlock -l password-file -r -F -d "Read the password from FILE's first line"
complete -c rlock -l prefix -x -d 'Key prefix (default $RLOCK_PREFIX, else rlock:)'
complete -c rlock -l connect-timeout -x -d 'Bound on connecting and authenticating (default 2s)'
complete -c rlock -l timeout -x -d 'Bound on one Redis round trip (default 2s)'
complete -c rlock -l json -d 'Machine-readable output on stdout'
complete -c rlock -s q -l quiet -d 'Only errors on stderr'
complete -c rlock -s v -l verbose -d 'Timestamped progress on stderr'
complete -c rlock -s h -l help -d 'Show help and exit'
complete -c rlock -s V -l version -d 'Show the version and exit'

# acquire
complete -c rlock -n '__fish_seen_subcommand_from acquire' -s t -l ttl -x -d 'Lock expiry (default 30s)'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -s w -l wait -x -d 'Wait at most DUR for a busy lock; 0: do not wait (default: forever)'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -s n -l no-wait -d 'Same as --wait 0'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -s E -l conflict-exit-code -x -d 'Exit status when the lock stays busy (default 1)'
complete -c rlock -n '__fish_seen_subcommand_from acquire' -l token -x -d 'Use TOKEN instead of a random one'

# release
complete -c rlock -n '__fish_seen_subcommand_from release' -l token -x -d "The owner's token (default \$RLOCK_TOKEN)"
complete -c rlock -n '__fish_seen_subcommand_from release' -l force -d 'Delete the lock whoever holds it, and say whose it was'

# extend
complete -c rlock -n '__fish_seen_subcommand_from extend' -s t -l ttl -x -d 'New time to live from now (default: as acquired)'
complete -c rlock -n '__fish_seen_subcommand_from extend' -l token -x -d "The owner's token (default \$RLOCK_TOKEN)"

# Lock names
complete -c rlock -n '__fish_seen_subcommand_from release extend status' -a '(__rlock_names)' -d 'Held lock'
