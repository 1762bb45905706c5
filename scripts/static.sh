#!/bin/sh
# static.sh: build fully static rlock binaries, dist/rlock-linux-x86_64 and
# dist/rlock-linux-aarch64: musl, with hiredis, libuuid and OpenSSL linked
# in, so that one file runs on any Linux of that architecture (glibc or
# musl, Debian, RHEL or Alpine) and speaks TLS.
#
# Usage: scripts/static.sh [x86_64] [aarch64]     (both when none is named)
#
# Everything comes from Debian's packages: the compilers (musl-tools;
# gcc-aarch64-linux-gnu and musl-dev:arm64 for aarch64) with apt-get, and
# the libraries' sources (openssl, hiredis, util-linux for libuuid) with
# apt-get source from a deb-src entry this script adds beside the system's
# own Debian entries.  Nothing else is downloaded, and no source enters the
# repository: sources and library builds live in the cache,
# $RLOCK_STATIC_CACHE or .static-cache/ (gitignored), reused by the next run
# (a new Debian version of a source package is built afresh).  rlock itself
# is built each time from a copy of the files git tracks, as they are in
# the work tree.  aarch64 binaries are checked under qemu-aarch64-static.
# Prints the path of each binary and its --version.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
cache=${RLOCK_STATIC_CACHE:-$top/.static-cache}
jobs=$(nproc 2>/dev/null || echo 2)

arches=${*:-x86_64 aarch64}
for a in $arches; do
	case $a in
	x86_64|aarch64) ;;
	*) echo "static.sh: unknown architecture '$a' (x86_64 or aarch64)" >&2
	   exit 64 ;;
	esac
done

# musl-gcc builds for the machine it runs on: x86_64 natively, aarch64
# with the cross compiler.
if [ "$(dpkg --print-architecture)" != amd64 ]; then
	echo "static.sh: builds on Debian amd64 only (this is $(dpkg --print-architecture))" >&2
	exit 1
fi

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# ------------------------------------------------------------ packages

# A deb-src entry for each Debian entry of the system's, so that apt-get
# source works; only Debian's own archives (debian.sources, sources.list).
add_deb_src() {
	[ -n "$(apt-cache showsrc openssl 2>/dev/null | head -n 1)" ] && return 1
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
		    $SUDO tee /etc/apt/sources.list.d/rlock-deb-src.sources >/dev/null
	fi
	if [ -f /etc/apt/sources.list ] &&
	    grep -q '^deb http[^ ]*debian' /etc/apt/sources.list; then
		sed -n 's/^deb \(http[^ ]*debian\)/deb-src \1/p' /etc/apt/sources.list |
		    $SUDO tee /etc/apt/sources.list.d/rlock-deb-src.list >/dev/null
	fi
	return 0
}

need="musl-tools musl-dev:amd64 dpkg-dev make perl binutils
build-essential autoconf automake pkg-config"
case " $arches " in
*" aarch64 "*)
	need="$need gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu
	    musl-dev:arm64 qemu-user-static" ;;
esac
update=0
if case " $arches " in *" aarch64 "*) true ;; *) false ;; esac &&
    ! dpkg --print-foreign-architectures | grep -qx arm64; then
	$SUDO dpkg --add-architecture arm64
	update=1
fi
add_deb_src && update=1
upd=
[ "$update" -eq 1 ] && upd=--update
# shellcheck disable=SC2086
"$top/scripts/apt-install.sh" $upd $need || exit 1

# ------------------------------------------------------------- sources

mkdir -p "$cache/src"
# One build at a time in a cache: two test runs side by side on one
# machine (a shared CI host) share it, and each run fetches, builds and
# copies its tree into it; the second waits for the first (a minute from
# a warm cache), at most 30 minutes.
exec 9>"$cache/.lock"
if ! flock -w 1800 9; then
	echo "static.sh: another build has held $cache/.lock for 30 minutes" \
	    "(is one hung? see its process, or remove nothing: the lock goes" \
	    "with it)" >&2
	exit 1
fi

# fetch PACKAGE: Debian's source package, unpacked with Debian's patches
# into $cache/src/PACKAGE-VERSION; sets src to that directory and ver to
# the Debian version.  The newest version the archive lists is taken, or,
# if the mirror does not serve it yet (a security update's may be listed
# first), the next; one already unpacked is not fetched again, nor for a
# day one the mirror did not serve.
fetch() {
	pkg=$1
	for ver in $(apt-cache showsrc "$pkg" | sed -n 's/^Version: //p' |
	    sort -r -V | head -n 5); do
		src=$cache/src/$pkg-$ver
		[ -f "$src/.unpacked" ] && return 0
		[ -n "$(find "$src.unserved" -mmin -1440 2>/dev/null)" ] && continue
		dl=$cache/src/dl-$pkg
		rm -rf "$dl" && mkdir -p "$dl"
		if (cd "$dl" && apt-get source --download-only -qq \
		    "$pkg=$ver" >download.log 2>&1); then
			# apt has checked each file against the archive's
			# signed index; the .dsc's own signature would need
			# the keyring of Debian's maintainers.
			rm -rf "$src"
			dpkg-source --no-check -x "$dl/${pkg}_"*.dsc "$src" \
			    >"$dl/unpack.log" 2>&1 ||
			    { cat "$dl/unpack.log" >&2; exit 1; }
			rm -rf "$dl" "$cache/src/${pkg}_"*
			touch "$src/.unpacked"
			return 0
		fi
		rm -rf "$dl"
		touch "$src.unserved"
		echo "static.sh: $pkg $ver is not served; trying an older one" >&2
	done
	echo "static.sh: cannot fetch Debian's source of $pkg" >&2
	exit 1
}

fetch openssl; openssl_src=$src; openssl_ver=$ver
fetch hiredis; hiredis_src=$src; hiredis_ver=$ver
fetch util-linux; ul_src=$src; ul_ver=$ver

# ------------------------------------------------------------ libraries

# The libraries of one architecture, each in $cache/ARCH/NAME-VERSION with a
# .done stamp: a run with the same Debian versions does nothing here.

# Only what a TLS client needs: no engines, modules, legacy ciphers, DTLS
# or SSLv3, no secure heap (musl has no kernel headers).  The certificate
# store is looked for in /etc/ssl (see src/tls.c).  A change here builds
# OpenSSL afresh: the options are part of the cache's name.
openssl_opts="no-shared no-module no-engine no-legacy no-tests no-afalgeng
no-dso no-async no-comp no-ssl3 no-dtls no-secure-memory --prefix=/nonexistent
--openssldir=/etc/ssl --libdir=lib"
openssl_key=$(echo "$openssl_opts" | cksum | cut -d' ' -f1)

build_openssl() {	# $1 arch, $2 OpenSSL target, $3 CC
	o=$cache/$1/openssl-$openssl_ver-$openssl_key
	[ -f "$o/.done" ] && return 0
	echo "static.sh: building OpenSSL $openssl_ver for $1" >&2
	rm -rf "$o" && mkdir -p "$o"
	# shellcheck disable=SC2086
	(cd "$o" && CC=$3 "$openssl_src/Configure" "$2" $openssl_opts \
	    >configure.log 2>&1 &&
	    make -j"$jobs" build_libs >make.log 2>&1) || {
		tail -n 30 "$o/configure.log" "$o/make.log" >&2 2>/dev/null
		exit 1
	}
	touch "$o/.done"
}

build_hiredis() {	# $1 arch, $2 CC, $3 AR
	h=$cache/$1/hiredis-$hiredis_ver
	[ -f "$h/.done" ] && return 0
	echo "static.sh: building hiredis $hiredis_ver for $1" >&2
	rm -rf "$h" && mkdir -p "$h/build" "$h/include/hiredis" "$h/lib"
	cp -R "$hiredis_src/." "$h/build/"
	(cd "$h/build" && make CC="$2" AR="$3" static >make.log 2>&1) || {
		tail -n 30 "$h/build/make.log" >&2; exit 1; }
	cp "$h/build/libhiredis.a" "$h/lib/"
	cp "$h/build/"*.h "$h/include/hiredis/"
	touch "$h/.done"
}

# libuuid alone, from util-linux's source: its .c files and the few of
# lib/ they use, without util-linux's configure (whose config.h is replaced
# by the handful of facts they ask about, all true of musl).
build_uuid() {		# $1 arch, $2 CC, $3 AR
	u=$cache/$1/libuuid-$ul_ver
	[ -f "$u/.done" ] && return 0
	echo "static.sh: building libuuid (util-linux $ul_ver) for $1" >&2
	rm -rf "$u" && mkdir -p "$u/obj" "$u/include/uuid" "$u/lib"
	cat >"$u/obj/config.h" <<-'EOF'
	#define HAVE_ERR_H 1
	#define HAVE_ERR 1
	#define HAVE_ERRX 1
	#define HAVE_WARN 1
	#define HAVE_WARNX 1
	#define HAVE_GETRANDOM 1
	#define HAVE_JRAND48 1
	#define HAVE_NANOSLEEP 1
	#define HAVE_USLEEP 1
	#define HAVE_UNISTD_H 1
	#define HAVE_STDLIB_H 1
	#define HAVE_SYS_TIME_H 1
	#define HAVE_SYS_SYSCALL_H 1
	#define HAVE_SYS_SOCKET_H 1
	#define HAVE_SYS_UN_H 1
	#define HAVE_SYS_IOCTL_H 1
	#define HAVE_SYS_FILE_H 1
	#define HAVE_NET_IF_H 1
	#define HAVE_NETINET_IN_H 1
	#define HAVE_STRNLEN 1
	#define HAVE_STRNDUP 1
	#define HAVE_DIRFD 1
	#define HAVE_DECL_DIRFD 1
	#define HAVE_SRANDOM 1
	#define HAVE_TLS 1
	#define HAVE_MEMPCPY 1
	#define PACKAGE "util-linux"
	#define PACKAGE_STRING "util-linux"
	EOF
	for f in libuuid/src/clear libuuid/src/compare libuuid/src/copy \
	    libuuid/src/gen_uuid libuuid/src/isnull libuuid/src/pack \
	    libuuid/src/parse libuuid/src/unpack libuuid/src/unparse \
	    libuuid/src/uuid_time libuuid/src/predefined lib/randutils \
	    lib/md5 lib/sha1; do
		$2 -O2 -D_GNU_SOURCE -include "$u/obj/config.h" \
		    -I"$ul_src/include" -I"$ul_src/libuuid/src" \
		    -c "$ul_src/$f.c" -o "$u/obj/$(basename "$f").o" \
		    2>>"$u/obj/build.log" || { cat "$u/obj/build.log" >&2; exit 1; }
	done
	$3 rcs "$u/lib/libuuid.a" "$u"/obj/*.o
	cp "$ul_src/libuuid/src/uuid.h" "$u/include/uuid/"
	touch "$u/.done"
}

# ---------------------------------------------------------------- rlock

# A copy of what git tracks, as the work tree has it, with its configure
# script made once for both architectures.
tree=$cache/tree
rm -rf "$tree" && mkdir -p "$tree"
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$tree"
(cd "$tree" && autoreconf -fi >"$cache/autoreconf.log" 2>&1) || {
	cat "$cache/autoreconf.log" >&2; exit 1; }

mkdir -p dist
for arch in $arches; do
	case $arch in
	x86_64)
		cc="musl-gcc"; ar="ar"; strip="strip"; run=; host=
		target=linux-x86_64; libc="musl-dev:amd64" ;;
	aarch64)
		cc="aarch64-linux-gnu-gcc -specs /usr/lib/aarch64-linux-musl/musl-gcc.specs"
		ar=aarch64-linux-gnu-ar; strip=aarch64-linux-gnu-strip
		run=qemu-aarch64-static; host=--host=aarch64-linux-gnu
		target=linux-aarch64; libc="musl-dev:arm64" ;;
	esac
	build_openssl "$arch" "$target" "$cc"
	build_hiredis "$arch" "$cc" "$ar"
	build_uuid "$arch" "$cc" "$ar"
	musl=$(dpkg-query -W -f='${Version}' "$libc" | sed 's/-[^-]*$//')

	echo "static.sh: building rlock for $arch" >&2
	b=$cache/$arch/rlock
	rm -rf "$b" && mkdir -p "$b"
	# shellcheck disable=SC2086
	(cd "$b" && "$tree/configure" $host --enable-werror \
	    --enable-static-tls --disable-static-deps \
	    CC="$cc" LDFLAGS=-static RLOCK_LIBC="musl $musl" \
	    HIREDIS_CFLAGS="-I$h/include -I$h/include/hiredis" \
	    HIREDIS_LIBS="$h/lib/libhiredis.a" \
	    UUID_CFLAGS="-I$u/include -I$u/include/uuid" \
	    UUID_LIBS="$u/lib/libuuid.a" \
	    OPENSSL_CFLAGS="-I$o/include -I$openssl_src/include" \
	    OPENSSL_LIBS="$o/libssl.a $o/libcrypto.a" \
	    >configure.log 2>&1 &&
	    make -j"$jobs" src/rlock >make.log 2>&1) || {
		tail -n 40 "$b/config.log" "$b/make.log" >&2 2>/dev/null
		exit 1
	}
	out=dist/rlock-linux-$arch
	$strip -o "$out.tmp" "$b/src/rlock"
	mv "$out.tmp" "$out"
	# Static: no program interpreter, no shared library asked for.
	if LC_ALL=C readelf -l "$out" | grep -q 'INTERP' ||
	    LC_ALL=C readelf -d "$out" 2>/dev/null | grep -q 'NEEDED'; then
		echo "static.sh: $out is not static" >&2
		exit 1
	fi
	echo "$out: $($run "./$out" --version)"
done
