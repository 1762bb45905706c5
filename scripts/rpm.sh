#!/bin/sh
# rpm.sh: build the RPM of rlock for RHEL, Rocky, Fedora, Amazon Linux and
# openSUSE hosts: the static binary of scripts/static.sh as /usr/bin/rlock
# (it depends on nothing, so one package suits every such distribution),
# its manual, the bash, zsh and fish completions, an example
# /etc/rlock.conf (a configuration file rpm never overwrites) and the
# README.  Then checks it: unpacks it with rpm2cpio and cpio into a scratch
# root, installs it with rpm -i into another, and runs what it installs
# against a throwaway redis-server on a Unix socket.  rpmbuild comes from
# Debian's rpm package.
#
# Usage: scripts/rpm.sh [x86_64|aarch64]          (default x86_64)
#
# Builds dist/rlock-linux-ARCH first if it is missing (scripts/static.sh);
# an aarch64 package is checked under qemu-aarch64-static.  Prints the path
# of the .rpm.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
arch=${1:-x86_64}
case $arch in
x86_64|aarch64) ;;
*) echo "rpm.sh: unknown architecture '$arch' (x86_64 or aarch64)" >&2; exit 64 ;;
esac

need="rpm rpm2cpio cpio redis-server"
# shellcheck disable=SC2086
./scripts/apt-install.sh $need

bin=dist/rlock-linux-$arch
[ -x "$bin" ] || ./scripts/static.sh "$arch" >&2
run=
[ "$arch" = "$(uname -m)" ] || run=qemu-$arch-static

version=$(sed -n 's/^AC_INIT(\[rlock\], \[\([^]]*\)\].*/\1/p' configure.ac)
# "rlock 0.1.0 (static x86_64 build, musl 1.2.3; TLS: OpenSSL 3.0.20 ...)"
ssl=$($run "$bin" --version | sed -n 's/.*TLS: OpenSSL \([0-9.]*\).*/\1/p')
if [ -z "$version" ] || [ -z "$ssl" ]; then
	echo "rpm.sh: cannot tell the versions of rlock and OpenSSL" >&2
	exit 1
fi

work=$(mktemp -d)
redis_pid=
cleanup() {
	if [ -n "$redis_pid" ]; then
		kill "$redis_pid" 2>/dev/null || :
		wait "$redis_pid" 2>/dev/null || :
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# What the package installs, laid out as rpmbuild's %install will copy it.
files=$work/files
mkdir -p "$files"
cp "$bin" "$files/rlock"
# rlock(7) and the pages it maps.
man7="rlock rlock-protocol rlock-exec rlock-schedules rlock-distribution rlock-security
    rlock-operations"
for m in rlock.1 rlock.conf.5; do gzip -9n <"man/$m" >"$files/$m.gz"; done
for m in $man7; do gzip -9n <"man/$m.7" >"$files/$m.7.gz"; done
cp completions/rlock "$files/rlock.bash"
cp completions/_rlock completions/rlock.fish examples/rlock.conf README.md \
    "$files/"
mkdir -p "$files/schema"
cp doc/schema/*.json "$files/schema/"
cp LICENSE "$files/LICENSE"

cat >"$work/rlock.spec" <<EOF
Name:		rlock
Version:	$version
Release:	1
Summary:	Distributed lock for shell scripts and cron, backed by Redis
License:	ISC
URL:		https://rlock.invalid/
# OpenSSL is linked into the static binary: a fix to it needs a new rlock.
Provides:	bundled(openssl) = $ssl
Suggests:	redis

# The binary is built, static and stripped already (scripts/static.sh):
# no debug package, and none of the host's post-install steps (whose
# strip would not know an aarch64 binary).
%global debug_package %{nil}
%global __os_install_post %{nil}

%description
rlock is to Redis what flock(1) is to a local file: one small binary that
guards a cron job, a deploy script or a migration across any number of
machines.  rlock exec NAME -- COMMAND takes the lock, runs the command,
keeps the lock alive while it runs, forwards signals, and releases it
when the command ends; a lost lock stops the command.

This package carries the static build: musl, with hiredis, libuuid and
OpenSSL $ssl linked in.  It depends on no library of the system.

%install
install -D -m 755 $files/rlock %{buildroot}%{_bindir}/rlock
install -D -m 644 $files/rlock.1.gz %{buildroot}%{_mandir}/man1/rlock.1.gz
install -D -m 644 $files/rlock.conf.5.gz %{buildroot}%{_mandir}/man5/rlock.conf.5.gz
install -d %{buildroot}%{_mandir}/man7
install -m 644 $(for m in $man7; do printf '%s ' "$files/$m.7.gz"; done)%{buildroot}%{_mandir}/man7/
install -D -m 644 $files/rlock.bash %{buildroot}%{_datadir}/bash-completion/completions/rlock
install -D -m 644 $files/_rlock %{buildroot}%{_datadir}/zsh/site-functions/_rlock
install -D -m 644 $files/rlock.fish %{buildroot}%{_datadir}/fish/vendor_completions.d/rlock.fish
install -D -m 644 $files/rlock.conf %{buildroot}%{_sysconfdir}/rlock.conf
install -D -m 644 $files/README.md %{buildroot}%{_docdir}/rlock/README.md
install -D -m 644 $files/rlock.conf %{buildroot}%{_docdir}/rlock/examples/rlock.conf
install -D -m 644 $files/LICENSE %{buildroot}%{_defaultlicensedir}/rlock/LICENSE
install -d %{buildroot}%{_datadir}/rlock/schema
install -m 644 $files/schema/*.json %{buildroot}%{_datadir}/rlock/schema/

%files
%{_bindir}/rlock
%{_mandir}/man1/rlock.1.gz
%{_mandir}/man5/rlock.conf.5.gz
$(for m in $man7; do echo "%{_mandir}/man7/$m.7.gz"; done)
%{_datadir}/bash-completion/completions/rlock
%{_datadir}/zsh/site-functions/_rlock
%{_datadir}/fish/vendor_completions.d/rlock.fish
%config(noreplace) %{_sysconfdir}/rlock.conf
%{_docdir}/rlock/README.md
%{_docdir}/rlock/examples/rlock.conf
%{_datadir}/rlock
%license %{_defaultlicensedir}/rlock/LICENSE
EOF
rpmbuild -bb --quiet --define "_topdir $work/top" --target "$arch" \
    "$work/rlock.spec" >"$work/rpmbuild.log" 2>&1 ||
	{ cat "$work/rpmbuild.log" >&2; exit 1; }
rpm=$(ls "$work/top/RPMS/$arch/"rlock-*.rpm)

# ------------------------------------------------------------------ check

rpm -qip "$rpm" >/dev/null
flags=$(rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm")
echo "$flags" | grep -q '^cn /etc/rlock.conf$' ||
	{ echo "rpm.sh: /etc/rlock.conf is not %config(noreplace):"; echo "$flags"; exit 1; } >&2

root=$work/root
mkdir -p "$root"
(cd "$root" && rpm2cpio "$rpm" | cpio -idm --quiet)
for f in usr/bin/rlock usr/share/man/man1/rlock.1.gz \
    usr/share/man/man5/rlock.conf.5.gz \
    $(for m in $man7; do echo "usr/share/man/man7/$m.7.gz"; done) \
    usr/share/bash-completion/completions/rlock \
    usr/share/zsh/site-functions/_rlock \
    usr/share/fish/vendor_completions.d/rlock.fish \
    etc/rlock.conf usr/share/doc/rlock/README.md \
    usr/share/doc/rlock/examples/rlock.conf \
    usr/share/rlock/schema/log.json usr/share/rlock/schema/status.json; do
	[ -f "$root/$f" ] || { echo "rpm.sh: the package lacks /$f" >&2; exit 1; }
done
cmp -s "$root/usr/bin/rlock" "$bin" ||
	{ echo "rpm.sh: /usr/bin/rlock is not $bin" >&2; exit 1; }
# And rpm itself installs it, into a scratch root of its own (Debian's
# rpm says it should not: it is not this system's package manager), and
# finds every file as the package says.
rpmroot=$work/rpmroot
mkdir -p "$rpmroot"
{ rpm --root "$rpmroot" --initdb &&
    rpm --root "$rpmroot" -i --ignorearch "$rpm" &&
    rpm --root "$rpmroot" -V rlock; } >"$work/rpm-i.log" 2>&1 ||
	{ cat "$work/rpm-i.log" >&2; exit 1; }
cmp -s "$rpmroot/usr/bin/rlock" "$bin" ||
	{ echo "rpm.sh: rpm -i did not install $bin as /usr/bin/rlock" >&2; exit 1; }
for m in 1:rlock:RLOCK:1 5:rlock.conf:RLOCK.CONF:5 $(for p in $man7; do
    echo "7:$p:$(echo "$p" | tr '[:lower:]' '[:upper:]'):7"; done); do
	oifs=$IFS; IFS=:
	# shellcheck disable=SC2086
	set -- $m
	IFS=$oifs
	MANPATH=$root/usr/share/man man -w "$1" "$2" >/dev/null 2>&1 ||
		zcat "$root/usr/share/man/man$1/$2.$1.gz" | grep -q "^\.Dt $3 $4" ||
		{ echo "rpm.sh: the manual $2($1) does not read" >&2; exit 1; }
done
$run "$root/usr/bin/rlock" --version

# The installed binary against a throwaway server on a Unix socket.
sock=$work/redis.sock
redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 \
    --save '' --appendonly no --daemonize no --dir "$work" \
    --logfile "$work/redis.log" </dev/null >/dev/null 2>&1 &
redis_pid=$!
i=0
until redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG; do
	i=$((i + 1))
	if [ "$i" -gt 250 ] || ! kill -0 "$redis_pid" 2>/dev/null; then
		echo "rpm.sh: redis-server did not start" >&2
		exit 1
	fi
	sleep 0.02
done
url=unix://$sock
export RLOCK_CONFIG="$root/etc/rlock.conf"
token=$($run "$root/usr/bin/rlock" -u "$url" acquire rpm-check)
[ "$(redis-cli -s "$sock" HKEYS "rlock:{rpm-check}")" = "$token" ] ||
	{ echo "rpm.sh: acquire did not take the lock" >&2; exit 1; }
$run "$root/usr/bin/rlock" -u "$url" release --token "$token" rpm-check
[ "$(redis-cli -s "$sock" EXISTS "rlock:{rpm-check}")" = 0 ] ||
	{ echo "rpm.sh: release did not give the lock back" >&2; exit 1; }
$run "$root/usr/bin/rlock" -u "$url" exec rpm-check -- true

mkdir -p "$top/dist"
cp "$rpm" "$top/dist/"
echo "dist/$(basename "$rpm")"
