/*
 * least-exec.c: the floor of an exec cycle, for bench/interleaved (issue
 * 49: speed targets are ratios to floors measured in the same run).
 *
 *   least-exec --script acquire|release
 *                       print the script (for SCRIPT LOAD)
 *   least-exec --script acquire-w|release-w
 *                       the same, for -w (a hand-over)
 *   least-exec [-w] ADDR ACQUIRE_SHA RELEASE_SHA NAME CMD [ARG...]
 *                       ADDR: a Unix socket's path, or a TCP port on
 *                       127.0.0.1; built with -DLEAST_TLS (and -lssl
 *                       -lcrypto), also tls:PORT:SESSION (TLS, resuming
 *                       the session kept in the file SESSION by the run
 *                       before, if any: warm) or tls:PORT:SESSION:CA (a
 *                       full handshake, the server's chain verified
 *                       against the file CA: cold); either keeps the
 *                       session the server gives in SESSION
 *
 * What a lock client cannot do without, and nothing else: connect, one
 * EVALSHA that takes the lock as the contract's least does (SET NX PX, a
 * fence from a counter, the holder's metadata expiring with it, an
 * 'acquired' event), vfork and execvp, wait, one EVALSHA that releases it
 * (compare and delete, a 'released' event).  No configuration, no guard,
 * no heartbeat, no retries, no hiredis: its cost is the process start, two
 * round trips and the scripts (and over TLS, OpenSSL's set-up, as rlock
 * makes it, and the handshake: the floor of a rediss:// cycle).  Exits
 * with the command's status; 1 if the lock is held; 69 on any failure to
 * talk to the server.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef LEAST_TLS
#include <openssl/ssl.h>

static SSL		*tls;		/* NULL: plain */
static SSL_SESSION	*fresh;		/* the newest session the server gave */
static const char	*sess_file;	/* where it is kept between runs */

static int
keep(SSL *s, SSL_SESSION *sess)
{
	(void)s;
	if (fresh != NULL)
		SSL_SESSION_free(fresh);
	fresh = sess;
	return 1;
}
#endif

static const char acquire_lua[] =
    "if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "	return 0\n"
    "end\n"
    "local f = redis.call('INCR', KEYS[2])\n"
    "redis.call('HSET', KEYS[3], 'host', ARGV[3], 'pid', ARGV[4], 'user',\n"
    "	ARGV[5], 'command', ARGV[6], 'acquired_ms', ARGV[7], 'ttl_ms',\n"
    "	ARGV[2], 'fence', f)\n"
    "redis.call('PEXPIRE', KEYS[3], ARGV[2])\n"
    "redis.call('XADD', KEYS[4], 'MAXLEN', '~', 100, '*', 'e', 'acquired',\n"
    "	'h', ARGV[3], 'p', ARGV[4], 'f', f)\n"
    "redis.call('PEXPIRE', KEYS[4], 86400000)\n"
    "return f\n";

static const char release_lua[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "local h = redis.call('HMGET', KEYS[3], 'host', 'pid', 'user',\n"
    "	'command', 'fence', 'acquired_ms')\n"
    "redis.call('DEL', KEYS[1], KEYS[3])\n"
    "redis.call('XADD', KEYS[4], 'MAXLEN', '~', 100, '*', 'e', 'released',\n"
    "	'h', h[1], 'p', h[2], 'u', h[3], 'c', h[4], 'f', h[5], 'd', h[6])\n"
    "redis.call('PEXPIRE', KEYS[4], 86400000)\n"
    "return 1\n";

/*
 * The least a hand-over needs (-w, for bench/interleaved's hand-over
 * floor): a caller that finds the name held is listed, in the same script,
 * with its metadata, and blocks on a wake list of its own; a release hands
 * the lock to the first listed (its hold, fence, metadata and 'acquired'
 * event, as the acquire would have written them) and wakes it with its
 * fence, so that the waiter runs its command on the wake, with no call
 * between.  No lease on the listing, no order but the list's, no waking of
 * a waiter that died: the floor, not a lock.
 */
static const char acquire_w_lua[] =
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
    "	local f = redis.call('INCR', KEYS[2])\n"
    "	redis.call('HSET', KEYS[3], 'host', ARGV[3], 'pid', ARGV[4],\n"
    "		'user', ARGV[5], 'command', ARGV[6], 'acquired_ms', ARGV[7],\n"
    "		'ttl_ms', ARGV[2], 'fence', f)\n"
    "	redis.call('PEXPIRE', KEYS[3], ARGV[2])\n"
    "	redis.call('XADD', KEYS[4], 'MAXLEN', '~', 100, '*', 'e',\n"
    "		'acquired', 'h', ARGV[3], 'p', ARGV[4], 'f', f)\n"
    "	redis.call('PEXPIRE', KEYS[4], 86400000)\n"
    "	return f\n"
    "end\n"
    "redis.call('RPUSH', KEYS[5], ARGV[1] .. '\\t' .. ARGV[3] .. '\\t' ..\n"
    "	ARGV[4] .. '\\t' .. ARGV[5] .. '\\t' .. ARGV[6])\n"
    "redis.call('PEXPIRE', KEYS[5], 60000)\n"
    "return 0\n";

static const char release_w_lua[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "local h = redis.call('HMGET', KEYS[3], 'host', 'pid', 'user',\n"
    "	'command', 'fence', 'acquired_ms')\n"
    "redis.call('DEL', KEYS[1], KEYS[3])\n"
    "redis.call('XADD', KEYS[4], 'MAXLEN', '~', 100, '*', 'e', 'released',\n"
    "	'h', h[1] or '', 'p', h[2] or '', 'u', h[3] or '', 'c', h[4] or '',\n"
    "	'f', h[5] or '', 'd', h[6] or '')\n"
    "redis.call('PEXPIRE', KEYS[4], 86400000)\n"
    "local w = redis.call('LPOP', KEYS[5])\n"
    "if not w then return 1 end\n"
    "local t, wh, wp, wu, wc = string.match(w,\n"
    "	'^([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)\\t([^\\t]*)\\t(.*)$')\n"
    "redis.call('SET', KEYS[1], t, 'PX', ARGV[2])\n"
    "local f = redis.call('INCR', KEYS[2])\n"
    "redis.call('HSET', KEYS[3], 'host', wh, 'pid', wp, 'user', wu,\n"
    "	'command', wc, 'acquired_ms', ARGV[7], 'ttl_ms', ARGV[2], 'fence', f)\n"
    "redis.call('PEXPIRE', KEYS[3], ARGV[2])\n"
    "redis.call('XADD', KEYS[4], 'MAXLEN', '~', 100, '*', 'e', 'acquired',\n"
    "	'h', wh, 'p', wp, 'f', f)\n"
    "local wake = KEYS[1] .. ':wake:' .. t\n"
    "redis.call('RPUSH', wake, f)\n"
    "redis.call('PEXPIRE', wake, 60000)\n"
    "return 1\n";

/*
 * Bytes from outside (the server's reply, an argument) on stderr: printable
 * ASCII as it is, every other byte as \xHH, so that nothing steers the
 * terminal (stricter than rlock's escape.c, which keeps valid UTF-8: this
 * program links nothing of rlock's).
 */
static void
show(const char *s, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (s[i] >= 0x20 && s[i] < 0x7f)
			fputc(s[i], stderr);
		else
			fprintf(stderr, "\\x%02x", (unsigned char)s[i]);
}

static void
die(const char *what)
{
	int	e = errno;

	fputs("least-exec: ", stderr);
	show(what, strlen(what));
	fprintf(stderr, ": %s\n", strerror(e));
	exit(69);
}

static int
dial(const char *addr)
{
	struct sockaddr_un	un;
	struct sockaddr_in	in;
	int			fd;
	int			one = 1;

	if (addr[0] == '/') {
		memset(&un, 0, sizeof un);
		un.sun_family = AF_UNIX;
		snprintf(un.sun_path, sizeof un.sun_path, "%s", addr);
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
		    connect(fd, (struct sockaddr *)&un, sizeof un) == -1)
			die(addr);
		return fd;
	}
	memset(&in, 0, sizeof in);
	in.sin_family = AF_INET;
	in.sin_port = htons((unsigned short)atoi(addr));
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == -1 ||
	    connect(fd, (struct sockaddr *)&in, sizeof in) == -1)
		die(addr);
	return fd;
}

static ssize_t
out(int fd, const char *b, size_t n)
{
#ifdef LEAST_TLS
	if (tls != NULL)
		return SSL_write(tls, b, (int)n);
#endif
	return write(fd, b, n);
}

static ssize_t
in(int fd, char *b, size_t n)
{
#ifdef LEAST_TLS
	if (tls != NULL)
		return SSL_read(tls, b, (int)n);
#endif
	return read(fd, b, n);
}

#ifdef LEAST_TLS
/*
 * tls:PORT:SESSION[:CA]: connect and shake hands as rlock does (OpenSSL
 * initialised without its cipher and string tables, digests entered only
 * for a chain to verify; the client session cache kept outside OpenSSL).
 */
static int
dial_tls(char *spec)
{
	unsigned char	 der[16384];
	const unsigned char *p;
	char		*port = spec + 4, *sess, *ca;
	SSL_CTX		*ctx;
	SSL_SESSION	*old;
	FILE		*f;
	long		 n;
	int		 fd;

	if ((sess = strchr(port, ':')) == NULL) {
		errno = EINVAL;
		die(spec);
	}
	*sess++ = '\0';
	if ((ca = strchr(sess, ':')) != NULL)
		*ca++ = '\0';
	sess_file = sess;
	fd = dial(port);
	OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
	    OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS | OPENSSL_INIT_NO_LOAD_SSL_STRINGS |
	    (ca != NULL ? 0 : OPENSSL_INIT_NO_ADD_ALL_DIGESTS), NULL);
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    (tls = SSL_new(ctx)) == NULL || SSL_set_fd(tls, fd) != 1)
		die("OpenSSL's set-up");
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
	    SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, keep);
	if (ca != NULL) {
		if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
			die(ca);
		SSL_set_verify(tls, SSL_VERIFY_PEER, NULL);
	} else if ((f = fopen(sess, "rb")) != NULL) {
		n = (long)fread(der, 1, sizeof der, f);
		fclose(f);
		p = der;
		if ((old = d2i_SSL_SESSION(NULL, &p, n)) == NULL ||
		    SSL_set_session(tls, old) != 1)
			die(sess);
		SSL_SESSION_free(old);
	}
	if (SSL_connect(tls) != 1) {
		errno = EPROTO;
		die("the TLS handshake");
	}
	/* The session tickets come after the handshake: with the reply. */
	return fd;
}

/* Keep the session the server gave, for the next run. */
static void
keep_session(void)
{
	unsigned char	 der[16384], *q = der;
	FILE		*f;
	int		 n;

	if (tls == NULL || fresh == NULL)
		return;
	n = i2d_SSL_SESSION(fresh, NULL);
	if (n <= 0 || n > (int)sizeof der)
		return;
	n = i2d_SSL_SESSION(fresh, &q);
	if ((f = fopen(sess_file, "wb")) != NULL) {
		fwrite(der, 1, (size_t)n, f);
		fclose(f);
	}
}
#endif

/* Send argv as one RESP command and read an integer reply. */
static long long
call(int fd, int argc, const char **argv)
{
	char	buf[4096], *p = buf, *end = buf + sizeof buf;
	ssize_t	n, got = 0;
	int	i;

	p += snprintf(p, (size_t)(end - p), "*%d\r\n", argc);
	for (i = 0; i < argc && p < end; i++)
		p += snprintf(p, (size_t)(end - p), "$%zu\r\n%s\r\n",
		    strlen(argv[i]), argv[i]);
	if (p >= end) {
		errno = E2BIG;
		die("request");
	}
	for (i = 0; i < p - buf; i += (int)n)
		if ((n = out(fd, buf + i, (size_t)(p - buf - i))) <= 0)
			die("write");
	while (got < 3 || buf[got - 1] != '\n') {
		if ((n = in(fd, buf + got, sizeof buf - 1 - (size_t)got)) <= 0)
			die("read");
		got += n;
	}
	buf[got] = '\0';
	if (buf[0] != ':') {
		fputs("least-exec: the server said ", stderr);
		show(buf, (size_t)got - 2);	/* less its \r\n */
		fputs("\n", stderr);
		exit(69);
	}
	return atoll(buf + 1);
}

/*
 * BLPOP key for up to secs: 1 when it popped (a reply of two bulk
 * strings: five lines), 0 when it timed out (a null array).
 */
static int
blpop(int fd, const char *key, const char *secs)
{
	char	buf[4096];
	ssize_t	n, got = 0;
	int	lines = 0, i, len;

	len = snprintf(buf, sizeof buf, "*3\r\n$5\r\nBLPOP\r\n$%zu\r\n%s\r\n"
	    "$%zu\r\n%s\r\n", strlen(key), key, strlen(secs), secs);
	if (len < 0 || (size_t)len >= sizeof buf) {
		errno = E2BIG;
		die("request");
	}
	for (i = 0; i < len; i += (int)n)
		if ((n = out(fd, buf + i, (size_t)(len - i))) <= 0)
			die("write");
	for (;;) {
		if ((n = in(fd, buf + got, sizeof buf - 1 - (size_t)got)) <= 0)
			die("read");
		for (i = (int)got; i < got + n; i++)
			lines += buf[i] == '\n';
		got += n;
		if (got >= 4 && strncmp(buf, "*-1\r\n", 5) == 0)
			return 0;
		if (buf[0] != '*') {
			buf[got] = '\0';
			fputs("least-exec: the server said ", stderr);
			show(buf, (size_t)got);
			fputs("\n", stderr);
			exit(69);
		}
		if (lines >= 5)
			return 1;
		if ((size_t)got >= sizeof buf - 1) {
			errno = E2BIG;
			die("reply");
		}
	}
}

/* Run the command and wait for it: its status, as a shell gives it. */
static int
run(char **cmd)
{
	pid_t	child;
	int	ws;

	if ((child = vfork()) == 0) {
		execvp(cmd[0], cmd);
		_exit(127);
	}
	if (child == -1)
		die("vfork");
	while (waitpid(child, &ws, 0) == -1)
		if (errno != EINTR)
			die("waitpid");
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

int
main(int argc, char **argv)
{
	unsigned char	 r[16];
	char		 token[33], host[256], pid[24], user[24], now[24];
	char		 k1[300], k2[310], k3[310], k4[310], k5[310];
	char		 wake[400];
	const char	*req[16];
	struct timespec	 ts;
	int		 fd, status, i, w = 0;

	if (argc == 3 && strcmp(argv[1], "--script") == 0) {
		fputs(strcmp(argv[2], "release") == 0 ? release_lua :
		    strcmp(argv[2], "acquire-w") == 0 ? acquire_w_lua :
		    strcmp(argv[2], "release-w") == 0 ? release_w_lua :
		    acquire_lua, stdout);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "-w") == 0) {
		w = 1;
		argc--;
		argv++;
	}
	if (argc < 6) {
		fprintf(stderr, "usage: least-exec [-w] ADDR ACQUIRE_SHA "
		    "RELEASE_SHA NAME CMD [ARG...]\n");
		return 64;
	}
	if (getrandom(r, sizeof r, 0) != sizeof r)
		die("getrandom");
	for (i = 0; i < 16; i++)
		snprintf(token + 2 * i, 3, "%02x", r[i]);
	gethostname(host, sizeof host);
	host[sizeof host - 1] = '\0';
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	snprintf(user, sizeof user, "%d", (int)getuid());
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(now, sizeof now, "%lld", (long long)ts.tv_sec * 1000 +
	    ts.tv_nsec / 1000000);
	snprintf(k1, sizeof k1, "le:{%.250s}", argv[4]);
	snprintf(k2, sizeof k2, "%s:fence", k1);
	snprintf(k3, sizeof k3, "%s:info", k1);
	snprintf(k4, sizeof k4, "%s:log", k1);
	snprintf(k5, sizeof k5, "%s:waiters", k1);
	snprintf(wake, sizeof wake, "%s:wake:%s", k1, token);

#ifdef LEAST_TLS
	char	spec[4096];

	snprintf(spec, sizeof spec, "%s", argv[1]);
	fd = strncmp(argv[1], "tls:", 4) == 0 ? dial_tls(spec) : dial(argv[1]);
#else
	fd = dial(argv[1]);
#endif
	if (w) {
		/* -w: the hand-over's scripts, with the waiters' key. */
		req[0] = "EVALSHA"; req[1] = argv[2]; req[2] = "5";
		req[3] = k1; req[4] = k2; req[5] = k3; req[6] = k4;
		req[7] = k5; req[8] = token; req[9] = "30000"; req[10] = host;
		req[11] = pid; req[12] = user; req[13] = argv[5];
		req[14] = now;
		if (call(fd, 15, req) == 0 && blpop(fd, wake, "10") == 0)
			return 1;
		status = run(argv + 5);
		req[1] = argv[3];
		call(fd, 15, req);
		return status;
	}
	req[0] = "EVALSHA"; req[1] = argv[2]; req[2] = "4";
	req[3] = k1; req[4] = k2; req[5] = k3; req[6] = k4;
	req[7] = token; req[8] = "30000"; req[9] = host; req[10] = pid;
	req[11] = user; req[12] = argv[5]; req[13] = now;
	if (call(fd, 14, req) == 0)
		return 1;
	status = run(argv + 5);
	req[1] = argv[3];
	call(fd, 8, req);
#ifdef LEAST_TLS
	keep_session();
#endif
	return status;
}
