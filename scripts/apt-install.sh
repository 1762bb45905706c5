#!/bin/sh
# apt-install.sh [--update] PACKAGE...: install those of the Debian packages
# that are not installed yet (nothing to do: no apt at all), through sudo
# when not root.  The package lists are updated first with --update, else
# only when an install without it fails.
#
# Every apt of the project's scripts goes through here, one at a time on
# the machine: two test runs side by side (scripts/test.sh from two clones)
# both install their packages at the start, and apt refuses a second
# process its locks at once ("Could not get lock /var/lib/dpkg/lock-
# frontend").  flock(1) on a file of the machine's own /tmp serialises
# ours; DPkg::Lock::Timeout waits for any other apt of the machine.
set -u
update=0
[ "${1:-}" = --update ] && { update=1; shift; }
installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"
}
missing=
for p in "$@"; do
	installed "$p" || missing="$missing $p"
done
[ -n "$missing" ] || [ "$update" -eq 1 ] || exit 0

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || {
		echo "apt-install.sh: need root (or sudo) to install:$missing" >&2
		exit 1
	}
	SUDO=sudo
fi
apt() {
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get -q -o DPkg::Lock::Timeout=600 "$@"
}
exec 8>>"${TMPDIR:-/tmp}/rlock-apt.lock" || exit 1
flock -w 1200 8 || {
	echo "apt-install.sh: another run has held ${TMPDIR:-/tmp}/rlock-apt.lock for 20 minutes (its apt is still going: run this again once it ends)" >&2
	exit 1
}
# Installed by the run that held the lock before us?
missing=
for p in "$@"; do
	installed "$p" || missing="$missing $p"
done
if [ "$update" -eq 1 ]; then
	apt update -qq || exit 1
fi
[ -n "$missing" ] || exit 0
echo "apt-install.sh: installing$missing" >&2
# shellcheck disable=SC2086
apt install -y -qq --no-install-recommends $missing >/dev/null 2>&1 || {
	[ "$update" -eq 0 ] && apt update -qq >/dev/null &&
	    apt install -y -qq --no-install-recommends $missing >/dev/null
}
