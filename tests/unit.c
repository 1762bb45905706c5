/* unit.c: TAP unit tests for the pure leaves: durations, URLs, names, JSON, config lines. */

/*
 * One program, run by make check, printing TAP.  The plan has to come
 * first, but its size is only known once every check has run, so the
 * results are gathered in a memory stream and printed after the plan.
 * Exits 1 if any check fails.  Calls nothing outside duration.h, url.h,
 * util.h, escape.h, json.h, conffile.h and held.h's pack, so it links
 * against librlock.a without the network layers.
 */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conffile.h"
#include "duration.h"
#include "escape.h"
#include "held.h"
#include "json.h"
#include "url.h"
#include "util.h"

static FILE	*out;
static char	*out_text;
static size_t	 out_len;
static int	 tests, failures;

static void
report(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
report(int ok, const char *fmt, ...)
{
	va_list	ap;

	tests++;
	if (!ok)
		failures++;
	fprintf(out, "%s %d - ", ok ? "ok" : "not ok", tests);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
}

/* Record one check; the description is a printf format. */
#define CHECK(cond, ...)	report((cond) != 0, __VA_ARGS__)
/* For the reason strings: does it contain this piece? */
#define HAS(s, piece)	((s) != NULL && strstr((s), (piece)) != NULL)

/* Diagnostics go to the TAP stream as comments, in order. */
static void
note(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void
note(const char *fmt, ...)
{
	va_list	ap;

	fputs("# ", out);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
}

/* ------------------------------------------------------------------ */
/* duration_parse */

static void
check_duration_ok(const char *s, int64_t want)
{
	char		 why[64] = "";
	int64_t		 ms = -12345;
	int		 r;

	r = duration_parse(s, &ms, why, sizeof why);
	if (r != 0)
		note("\"%s\": %s", s, why[0] != '\0' ? why : "(no reason)");
	else if (ms != want)
		note("\"%s\": got %lld, want %lld", s, (long long)ms,
		    (long long)want);
	CHECK(r == 0 && ms == want, "duration_parse: \"%s\" is %lld ms", s,
	    (long long)want);
}

static void
check_duration_bad(const char *in, const char *reason)
{
	const char	*s = in != NULL ? in : "(null)";
	char		 why[64] = "";
	int64_t		 ms = -12345;
	int		 r;

	r = duration_parse(in, &ms, why, sizeof why);
	if (r == 0)
		note("\"%s\": accepted as %lld", s, (long long)ms);
	else if (!HAS(why, reason))
		note("\"%s\": reason \"%s\"", s, why);
	CHECK(r == -1 && HAS(why, reason) && ms == -12345,
	    "duration_parse: \"%s\" is refused: %s", s, reason);
}

static void
test_duration_parse(void)
{
	check_duration_ok("0", 0);
	check_duration_ok("0s", 0);
	check_duration_ok("0ms", 0);
	check_duration_ok("0.0", 0);
	check_duration_ok("30d", INT64_C(2592000000));
	/* The fuzzer's: twelve fraction digits of a day overflowed. */
	check_duration_ok(".26830002200000d", INT64_C(23181122));
	check_duration_ok("0.5d", INT64_C(43200000));
	check_duration_ok("0m", 0);
	check_duration_ok("30", 30000);
	check_duration_ok("1", 1000);
	check_duration_ok("250ms", 250);
	check_duration_ok("1ms", 1);
	check_duration_ok("1.5s", 1500);
	check_duration_ok("1.5", 1500);
	check_duration_ok("0.1s", 100);
	check_duration_ok("0.001", 1);
	check_duration_ok(".5s", 500);
	check_duration_ok("2m", 120000);
	check_duration_ok("1.5m", 90000);
	check_duration_ok("1h", 3600000);
	check_duration_ok("0.5h", 1800000);
	check_duration_ok("24h", 86400000);
	check_duration_ok("720h", INT64_C(2592000000));
	check_duration_ok("007s", 7000);
	check_duration_ok("1.5ms", 2);
	check_duration_ok("0.5ms", 1);
	check_duration_ok("2.5ms", 3);
	check_duration_ok("1.4999ms", 1);
	check_duration_ok("0.0005", 1);
	check_duration_ok("0.0014999", 1);
	check_duration_ok("0.123456789012345678s", 123);
	check_duration_ok("0.00001h", 36);
	check_duration_ok("876000h", INT64_C(3153600000000));
	check_duration_ok("3155760000s", INT64_C(3155760000000));

	check_duration_bad("", "empty");
	check_duration_bad(NULL, "empty");
	check_duration_bad("abc", "not a number");
	check_duration_bad("s", "not a number");
	check_duration_bad(".", "not a number");
	check_duration_bad("5.", "not a number");
	check_duration_bad("1.5.2", "not a number");
	check_duration_bad(" 1", "not a number");
	check_duration_bad("1 s", "not a number");
	check_duration_bad("1s ", "not a number");
	check_duration_bad("+1", "not a number");
	check_duration_bad("1e3", "not a number");
	check_duration_bad("1E3", "not a number");
	check_duration_bad("0x10", "not a number");
	check_duration_bad("inf", "not a number");
	check_duration_bad("infinity", "not a number");
	check_duration_bad("nan", "not a number");
	check_duration_bad("NaN", "not a number");
	check_duration_bad("-1", "negative");
	check_duration_bad("-1s", "negative");
	check_duration_bad("-0.5", "negative");
	check_duration_bad("5x", "unknown unit 'x'");
	check_duration_bad("5sec", "unknown unit 'sec'");
	check_duration_bad("5w", "unknown unit 'w'");
	check_duration_bad("5S", "unknown unit 'S'");
	check_duration_bad("5us", "unknown unit 'us'");
	check_duration_bad("3155760001s", "too large");
	check_duration_bad("876601h", "too large");
	check_duration_bad("99999999999999999999999999", "too large");
	check_duration_bad("9223372036854775808ms", "too large");
	check_duration_bad("0.0004", "shorter than 1ms");
	check_duration_bad("0.0004999", "shorter than 1ms");
	check_duration_bad("0.4ms", "shorter than 1ms");
	check_duration_bad("0.0000000000000000001s", "shorter than 1ms");
}

/* ------------------------------------------------------------------ */
/* duration_format */

static void
check_format(int64_t ms, const char *want)
{
	char	buf[32];

	duration_format(ms, buf, sizeof buf);
	if (strcmp(buf, want) != 0)
		note("%lld: got \"%s\"", (long long)ms, buf);
	CHECK(strcmp(buf, want) == 0, "duration_format: %lld ms is \"%s\"",
	    (long long)ms, want);
}

static void
test_duration_format(void)
{
	char	small[4];

	check_format(0, "0ms");
	check_format(-5, "0ms");
	check_format(INT64_MIN, "0ms");
	check_format(1, "1ms");
	check_format(250, "250ms");
	check_format(999, "999ms");
	check_format(1000, "1s");
	check_format(1500, "1.5s");
	check_format(1550, "1.5s");
	check_format(30000, "30s");
	check_format(59900, "59.9s");
	check_format(59999, "59.9s");
	check_format(60000, "1m");
	check_format(120000, "2m");
	check_format(150000, "2m30s");
	check_format(3599999, "59m59s");
	check_format(3600000, "1h");
	check_format(3720000, "1h2m");
	check_format(86399999, "23h59m");
	check_format(86400000, "1d");
	check_format(INT64_C(273600000), "3d4h");
	check_format(INT64_C(259200000), "3d");

	CHECK(duration_format(1500, small, sizeof small) == small &&
	    strcmp(small, "1.5") == 0,
	    "duration_format: truncates to the buffer and returns it");
}

/* ------------------------------------------------------------------ */
/* url_parse */

static int
same(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

struct url_case {
	const char	*in;
	enum url_scheme	 scheme;
	const char	*host;
	int		 port;
	const char	*path;
	const char	*user;
	const char	*password;
	int		 db;
	const char	*display;
};

static const struct url_case url_good[] = {
	{ "redis://localhost", URL_TCP, "localhost", 6379, NULL, NULL, NULL,
	    -1, "redis://localhost:6379" },
	{ "redis://127.0.0.1:6379", URL_TCP, "127.0.0.1", 6379, NULL, NULL,
	    NULL, -1, "redis://127.0.0.1:6379" },
	{ "redis://db1:6380/", URL_TCP, "db1", 6380, NULL, NULL, NULL, -1,
	    "redis://db1:6380" },
	{ "redis://db1/3", URL_TCP, "db1", 6379, NULL, NULL, NULL, 3,
	    "redis://db1:6379/3" },
	{ "redis://db1:1/0", URL_TCP, "db1", 1, NULL, NULL, NULL, 0,
	    "redis://db1:1/0" },
	{ "redis://db1:65535/2147483647", URL_TCP, "db1", 65535, NULL, NULL,
	    NULL, 2147483647, "redis://db1:65535/2147483647" },
	{ "REDIS://Host-1.example.com:7000", URL_TCP, "Host-1.example.com",
	    7000, NULL, NULL, NULL, -1, "redis://Host-1.example.com:7000" },
	{ "rediss://cache.internal:6380/1", URL_TLS, "cache.internal", 6380,
	    NULL, NULL, NULL, 1, "rediss://cache.internal:6380/1" },
	{ "RedisS://h", URL_TLS, "h", 6379, NULL, NULL, NULL, -1,
	    "rediss://h:6379" },
	{ "redis://[::1]", URL_TCP, "::1", 6379, NULL, NULL, NULL, -1,
	    "redis://[::1]:6379" },
	{ "rediss://[::1]:6380", URL_TLS, "::1", 6380, NULL, NULL, NULL, -1,
	    "rediss://[::1]:6380" },
	{ "redis://[fe80::1:2]:7000/5", URL_TCP, "fe80::1:2", 7000, NULL,
	    NULL, NULL, 5, "redis://[fe80::1:2]:7000/5" },
	{ "redis://[::ffff:10.0.0.1]", URL_TCP, "::ffff:10.0.0.1", 6379, NULL,
	    NULL, NULL, -1, "redis://[::ffff:10.0.0.1]:6379" },
	/* Seed nodes of one Cluster: host and port are the first seed's. */
	{ "redis://:pw@10.0.0.1:7000,10.0.0.2,[::1]:7002/0", URL_TCP,
	    "10.0.0.1", 7000, NULL, NULL, "pw", 0,
	    "redis://10.0.0.1:7000,10.0.0.2:6379,[::1]:7002/0" },
	{ "rediss://u:pw@h1,h2:7001", URL_TLS, "h1", 6379, NULL, "u", "pw",
	    -1, "rediss://u@h1:6379,h2:7001" },
	{ "unix:///tmp/a,b.sock", URL_UNIX, NULL, 0, "/tmp/a,b.sock", NULL,
	    NULL, -1, "unix:///tmp/a,b.sock" },
	{ "redis://alice:s3cret@db1:6379/2", URL_TCP, "db1", 6379, NULL,
	    "alice", "s3cret", 2, "redis://alice@db1:6379/2" },
	{ "redis://:s3cret@db1", URL_TCP, "db1", 6379, NULL, NULL, "s3cret",
	    -1, "redis://db1:6379" },
	{ "redis://alice@db1", URL_TCP, "db1", 6379, NULL, "alice", NULL, -1,
	    "redis://alice@db1:6379" },
	{ "redis://alice:@db1", URL_TCP, "db1", 6379, NULL, "alice", NULL, -1,
	    "redis://alice@db1:6379" },
	{ "redis://@db1", URL_TCP, "db1", 6379, NULL, NULL, NULL, -1,
	    "redis://db1:6379" },
	{ "redis://al%69ce:p%40ss%3Aw%2fd@db1", URL_TCP, "db1", 6379, NULL,
	    "alice", "p@ss:w/d", -1, "redis://alice@db1:6379" },
	{ "redis://:p@ss@db1:6390", URL_TCP, "db1", 6390, NULL, NULL, "p@ss",
	    -1, "redis://db1:6390" },
	{ "redis://:a:b/c@db1/4", URL_TCP, "db1", 6379, NULL, NULL, "a:b/c", 4,
	    "redis://db1:6379/4" },
	{ "rediss://bob:pw@[::1]:6380/1", URL_TLS, "::1", 6380, NULL, "bob",
	    "pw", 1, "rediss://bob@[::1]:6380/1" },
	{ "unix:///tmp/r.sock", URL_UNIX, NULL, 0, "/tmp/r.sock", NULL, NULL,
	    -1, "unix:///tmp/r.sock" },
	{ "unix:///tmp/r.sock?db=2", URL_UNIX, NULL, 0, "/tmp/r.sock", NULL,
	    NULL, 2, "unix:///tmp/r.sock?db=2" },
	{ "unix:/var/run/redis.sock", URL_UNIX, NULL, 0, "/var/run/redis.sock",
	    NULL, NULL, -1, "unix:///var/run/redis.sock" },
	{ "UNIX:///s?db=0", URL_UNIX, NULL, 0, "/s", NULL, NULL, 0,
	    "unix:///s?db=0" },
};

static void
check_url_good(const struct url_case *c)
{
	struct url	u;
	char		why[256] = "";
	int		r, ok;

	r = url_parse(c->in, &u, why, sizeof why);
	if (r != 0) {
		note("\"%s\": %s", c->in, why);
		CHECK(0, "url_parse: \"%s\" is accepted", c->in);
		return;
	}
	ok = u.scheme == c->scheme && same(u.host, c->host) &&
	    same(u.path, c->path) && same(u.user, c->user) &&
	    same(u.password, c->password) && u.db == c->db &&
	    same(u.display, c->display) &&
	    (c->scheme == URL_UNIX || u.port == c->port);
	if (!ok)
		note("\"%s\": scheme %d host %s port %d path %s user %s "
		    "password %s db %d display %s", c->in, (int)u.scheme,
		    u.host ? u.host : "(null)", u.port,
		    u.path ? u.path : "(null)", u.user ? u.user : "(null)",
		    u.password ? u.password : "(null)", u.db,
		    u.display ? u.display : "(null)");
	CHECK(ok, "url_parse: \"%s\" gives %s", c->in, c->display);
	if (c->password != NULL)
		CHECK(u.display != NULL && !HAS(u.display, c->password),
		    "url_parse: display of \"%s\" hides the password", c->in);
	url_free(&u);
	CHECK(u.host == NULL && u.path == NULL && u.user == NULL &&
	    u.password == NULL && u.display == NULL,
	    "url_free: \"%s\" leaves the struct empty", c->in);
}

struct url_bad {
	const char	*in;
	const char	*reason;
};

static const struct url_bad url_bad[] = {
	{ "", "empty" },
	{ "localhost:6379", "unknown scheme 'localhost'" },
	{ "db1", "missing scheme" },
	{ "://db1", "missing scheme" },
	{ "http://db1", "unknown scheme 'http'" },
	{ "http://db1", "redis://, rediss://, unix://, redis-sentinel:// or "
	    "rediss-sentinel://" },
	{ "rediss-sentinel://h:26379", "missing /MASTER" },
	{ "redis-sentinel://h:26379", "missing /MASTER" },
	{ "redis-sentinel://h:26379/", "missing the master's name" },
	{ "redis-sentinel://h1,,h2/m", "empty sentinel address" },
	{ "redis://h1,,h2", "empty host in the seed list" },
	{ "redis://h1:7000,", "empty host in the seed list" },
	{ "redis://,h1/0", "empty host in the seed list" },
	{ "redis://h1,h2:x", "bad port" },
	{ "redis://h1,H1:6379", "seed 1 is given twice" },
	{ "redis://h1,rediss://h2", "one scheme for every seed" },
	{ "unix:///a.sock,/b.sock", "names one socket" },
	{ "unix:///a.sock,", "names one socket" },
	{ "redis-sentinel://h:0/m", "bad port" },
	{ "redis-sentinel://h/m?db=x", "bad db" },
	{ "redis-sentinel://h/m?x=1", "unknown query parameter" },
	{ "redis-sentinel:h/m", "expected '//'" },
	{ "redis-sentinel://h/m/2", "a '/' after the master's name" },
	{ "redis:db1", "expected '//'" },
	{ "redis://", "missing host" },
	{ "redis://:6379", "missing host" },
	{ "redis:///0", "missing host" },
	{ "redis://user:pw@", "missing host" },
	{ "redis://[]:6379", "missing host" },
	{ "redis://::1", "in brackets" },
	{ "redis://[::1", "missing ']'" },
	{ "redis://[::1]x", "unexpected 'x' after the host" },
	{ "redis://[g::1]", "unexpected 'g' in the IPv6 address" },
	{ "redis://fe80::1", "in brackets" },
	{ "redis://db1:", "missing port" },
	{ "redis://db1:0", "bad port" },
	{ "redis://db1:65536", "bad port" },
	{ "redis://db1:99999999999999999999", "bad port" },
	{ "redis://db1:-1", "bad port" },
	{ "redis://db1:63x79", "bad port" },
	{ "redis://db1:+6379", "bad port" },
	{ "redis://db1/x", "bad db" },
	{ "redis://db1/-1", "bad db" },
	{ "redis://db1/2147483648", "bad db" },
	{ "redis://db1/1/2", "bad db" },
	{ "redis://db1/0?db=1", "query parameters" },
	{ "redis://db1?db=1", "query parameters" },
	{ "redis://db1#frag", "unexpected '#' after the host" },
	{ "redis://db 1", "byte 11 (0x20) is a space" },
	/* Found by fuzzing: raw control bytes reached the display form. */
	{ "redis://\x01secret\x01p%40:p%40ss@h", "control character" },
	{ "redis://h\x7f", "byte 10 (0x7f)" },
	{ "redis://user:pw%4@db1", "bad percent-escape in the password" },
	{ "redis://user:pw%zz@db1", "bad percent-escape in the password" },
	{ "redis://user:pw%00x@db1", "bad percent-escape in the password" },
	{ "redis://us%g1er:pw@db1", "bad percent-escape in the user name" },
	{ "unix://", "empty socket path" },
	{ "unix:", "empty socket path" },
	{ "unix://?db=1", "empty socket path" },
	{ "unix://tmp/r.sock", "must be absolute" },
	{ "unix:tmp/r.sock", "must be absolute" },
	{ "unix:///tmp/r.sock?db=", "bad db" },
	{ "unix:///tmp/r.sock?db=x", "bad db" },
	{ "unix:///tmp/r.sock?db=2147483648", "bad db" },
	{ "unix:///tmp/r.sock?db=1&db=2", "twice" },
	{ "unix:///tmp/r.sock?timeout=5", "unknown query parameter 'timeout'" },
	{ "unix:///tmp/r.sock?db=1&x=2", "unknown query parameter 'x'" },
	{ "unix:///tmp/r.sock?", "empty query parameter" },
};

static void
check_url_bad(const struct url_bad *c)
{
	struct url	u;
	char		why[256] = "";
	int		r;

	memset(&u, 0xa5, sizeof u);
	r = url_parse(c->in, &u, why, sizeof why);
	if (r == 0)
		note("\"%s\": accepted as %s", c->in, u.display);
	else if (!HAS(why, c->reason))
		note("\"%s\": reason \"%s\"", c->in, why);
	CHECK(r == -1 && HAS(why, c->reason),
	    "url_parse: \"%s\" is refused: %s", c->in, c->reason);
	if (r == 0) {
		url_free(&u);
		return;
	}
	/* Nothing to free, and freeing anyway must be harmless. */
	CHECK(u.host == NULL && u.path == NULL && u.user == NULL &&
	    u.password == NULL && u.display == NULL,
	    "url_parse: failed \"%s\" leaves nothing allocated", c->in);
	url_free(&u);
}

static void
test_url(void)
{
	struct url	u;
	char		why[256], tiny[8];
	size_t		i;
	int		r;

	for (i = 0; i < sizeof url_good / sizeof url_good[0]; i++)
		check_url_good(&url_good[i]);
	for (i = 0; i < sizeof url_bad / sizeof url_bad[0]; i++)
		check_url_bad(&url_bad[i]);

	/* The secret must not leak through any refusal either. */
	r = url_parse("redis://:hunter2", &u, why, sizeof why);
	CHECK(r == -1 && !HAS(why, "hunter2"),
	    "url_parse: a password with no host stays out of the reason");
	r = url_parse("redis://db1:hunter2", &u, why, sizeof why);
	CHECK(r == -1 && !HAS(why, "hunter2"),
	    "url_parse: a password in the port's place stays out of the "
	    "reason");
	r = url_parse("redis://:hunter2@db1/hunter3", &u, why, sizeof why);
	CHECK(r == -1 && !HAS(why, "hunter"),
	    "url_parse: a bad db keeps the password out of the reason");
	r = url_parse("redis://:hunter2@db1:x", &u, why, sizeof why);
	CHECK(r == -1 && !HAS(why, "hunter2"),
	    "url_parse: a bad port keeps the password out of the reason");
	r = url_parse("redis://:hunter%zz@db1", &u, why, sizeof why);
	CHECK(r == -1 && !HAS(why, "hunter"),
	    "url_parse: a bad escape keeps the password out of the reason");
	r = url_parse("redis://hunter2:hunter2@h:1/1", &u, why, sizeof why);
	CHECK(r == 0 && strcmp(u.display, "redis://hunter2@h:1/1") == 0,
	    "url_parse: a user named like the password is still shown");
	if (r == 0)
		url_free(&u);

	r = url_parse("redis://", &u, tiny, sizeof tiny);
	CHECK(r == -1 && strlen(tiny) < sizeof tiny,
	    "url_parse: a short why buffer is truncated, not overrun");
	r = url_parse("redis://", &u, NULL, 0);
	CHECK(r == -1, "url_parse: a NULL why is allowed");
	r = url_parse(NULL, &u, why, sizeof why);
	CHECK(r == -1 && HAS(why, "empty"), "url_parse: NULL is refused");

	memset(&u, 0, sizeof u);
	url_free(&u);
	url_free(&u);
	CHECK(u.host == NULL, "url_free: a zeroed struct can be freed twice");
}

/* url_mask: a password in free text, whatever its length, is URL_MASK */

static const struct {
	const char	*in, *want;
} mask_cases[] = {
	{ "unknown command 'redis://:s3cret@10.0.0.5:6379'",
	  "unknown command 'redis://:****@10.0.0.5:6379'" },
	{ "redis://u:x@h", "redis://u:****@h" },
	{ "redis://u:a-much-longer-password@h", "redis://u:****@h" },
	{ "pg_dump --dbname=postgresql://u:SECRET@db/app",
	  "pg_dump --dbname=postgresql://u:****@db/app" },
	{ "a https://t:p@x/y b rediss://:q@z", "a https://t:****@x/y b rediss://:****@z" },
	{ "redis://:p@ss/w@rd@h:1", "redis://:****@h:1" },
	{ "redis://alice@h", "redis://alice@h" },
	{ "redis://h:6379/0", "redis://h:6379/0" },
	{ "no url: a@b", "no url: a@b" },
	{ "://:x@h", "://:x@h" },
	{ "redis://:@h", "redis://:****@h" },
	{ "", "" },
};

static void
test_url_mask(void)
{
	char	buf[128], tiny[12];
	size_t	i;

	for (i = 0; i < sizeof mask_cases / sizeof mask_cases[0]; i++) {
		url_mask(mask_cases[i].in, buf, sizeof buf);
		CHECK(strcmp(buf, mask_cases[i].want) == 0,
		    "url_mask: \"%s\" gives \"%s\" (got \"%s\")",
		    mask_cases[i].in, mask_cases[i].want, buf);
	}
	url_mask("redis://:hunter2@h", tiny, sizeof tiny);
	CHECK(strlen(tiny) < sizeof tiny && !HAS(tiny, "hunter"),
	    "url_mask: a short buffer is cut, never overrun");
}

/* ------------------------------------------------------------------ */
/* json_strn: escaping */

static void
check_json(const char *in, size_t len, const char *want, const char *what)
{
	struct buf	b;
	struct json	j;

	buf_init(&b);
	json_open(&j, &b, 0);
	json_strn(&j, in, len);
	if (b.len != strlen(want) || memcmp(b.p, want, b.len) != 0)
		note("%s: got [%s]", what, b.p);
	CHECK(b.len == strlen(want) && strcmp(b.p, want) == 0,
	    "json_strn: %s", what);
	buf_free(&b);
}

#define JSON(lit, want, what)	check_json(lit, sizeof lit - 1, want, what)

static void
test_json(void)
{
	JSON("", "\"\"", "the empty string is two quotes");
	JSON("job", "\"job\"", "plain ASCII passes through");
	JSON("a\"b", "\"a\\\"b\"", "a quote is escaped");
	JSON("a\\b", "\"a\\\\b\"", "a backslash is escaped");
	JSON("/", "\"/\"", "a slash is left alone");
	JSON("\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\"", "short escapes");
	JSON("\x01\x1f", "\"\\u0001\\u001f\"", "other controls are \\u00XX");
	JSON("a\0b", "\"a\\u0000b\"", "an embedded NUL is \\u0000");
	JSON("\x7f", "\"\\u007f\"", "DEL is \\u007f");
	JSON("z\xc3\xbcrich", "\"z\xc3\xbcrich\"",
	    "two-byte UTF-8 passes through");
	JSON("\xe2\x82\xac", "\"\xe2\x82\xac\"",
	    "three-byte UTF-8 passes through");
	JSON("\xf0\x9f\x94\x92", "\"\xf0\x9f\x94\x92\"",
	    "four-byte UTF-8 passes through");
	JSON("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"",
	    "U+10FFFF passes through");
	JSON("\xc2\x85", "\"\xc2\x85\"", "a C1 control is valid UTF-8");
	JSON("a\xff" "b", "\"a\xef\xbf\xbd" "b\"",
	    "a stray 0xff becomes U+FFFD");
	JSON("\x80", "\"\xef\xbf\xbd\"",
	    "a lone continuation byte becomes U+FFFD");
	JSON("\xc0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\"",
	    "an overlong NUL becomes two U+FFFD");
	JSON("\xe0\x80\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
	    "an overlong three-byte form becomes three U+FFFD");
	JSON("\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
	    "a surrogate becomes three U+FFFD");
	JSON("\xf4\x90\x80\x80",
	    "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
	    "a code point past U+10FFFF becomes U+FFFD per byte");
	JSON("\xe2\x82", "\"\xef\xbf\xbd\xef\xbf\xbd\"",
	    "a truncated sequence at the end becomes U+FFFD per byte");
	JSON("\xe2\x82x", "\"\xef\xbf\xbd\xef\xbf\xbdx\"",
	    "a truncated sequence resynchronises on the next character");
	JSON("\xe2\x82\"", "\"\xef\xbf\xbd\xef\xbf\xbd\\\"\"",
	    "a quote after a truncated sequence is still escaped");
}

/* ------------------------------------------------------------------ */
/* The JSON writer */

/* Does b hold exactly want?  Say what it holds if not. */
static void
check_written(struct buf *b, const char *want, const char *what)
{
	if (strcmp(b->p, want) != 0)
		note("%s: got [%s]", what, b->p);
	CHECK(b->len == strlen(want) && strcmp(b->p, want) == 0,
	    "json writer: %s", what);
	buf_free(b);
	buf_init(b);
}

static void
test_json_writer(void)
{
	struct json	j;
	struct buf	b;

	buf_init(&b);
	json_open(&j, &b, 0);
	json_object_begin(&j);
	json_object_end(&j);
	check_written(&b, "{}", "an empty object");

	json_open(&j, &b, 0);
	json_array_begin(&j);
	json_array_end(&j);
	check_written(&b, "[]", "an empty array");

	json_open(&j, &b, 0);
	json_object_begin(&j);
	json_key(&j, "s");
	json_str(&j, "x");
	json_key(&j, "n");
	json_int(&j, -42);
	json_key(&j, "big");
	json_int(&j, INT64_MAX);
	json_key(&j, "t");
	json_bool(&j, 1);
	json_key(&j, "f");
	json_bool(&j, 0);
	json_key(&j, "z");
	json_null(&j);
	json_key(&j, "nul");
	json_str(&j, NULL);
	json_object_end(&j);
	check_written(&b, "{\"s\":\"x\",\"n\":-42,"
	    "\"big\":9223372036854775807,\"t\":true,\"f\":false,"
	    "\"z\":null,\"nul\":null}",
	    "every kind of value, a comma between members, NULL is null");

	json_open(&j, &b, 0);
	json_array_begin(&j);
	json_int(&j, 1);
	json_array_begin(&j);
	json_array_end(&j);
	json_object_begin(&j);
	json_key(&j, "a");
	json_array_begin(&j);
	json_object_begin(&j);
	json_object_end(&j);
	json_object_begin(&j);
	json_key(&j, "b");
	json_int(&j, 2);
	json_object_end(&j);
	json_array_end(&j);
	json_key(&j, "c");
	json_int(&j, 3);
	json_object_end(&j);
	json_str(&j, "");
	json_array_end(&j);
	check_written(&b, "[1,[],{\"a\":[{},{\"b\":2}],\"c\":3},\"\"]",
	    "nesting: commas between values at each depth, none after '[' "
	    "or '{' or a key");

	json_open(&j, &b, JSON_LINES);
	json_array_begin(&j);
	json_object_begin(&j);
	json_key(&j, "a");
	json_array_begin(&j);
	json_int(&j, 1);
	json_int(&j, 2);
	json_array_end(&j);
	json_key(&j, "b");
	json_int(&j, 3);
	json_object_end(&j);
	json_object_begin(&j);
	json_object_end(&j);
	json_array_end(&j);
	check_written(&b, "[{\"a\":[1,2],\"b\":3},\n{}]",
	    "JSON_LINES: a newline after the outermost array's commas only");

	json_open(&j, &b, 0);
	json_object_begin(&j);
	json_key(&j, "k\"\n\x01");
	json_strn(&j, "a\0b\xff\xc3\xbc\t", 7);
	json_object_end(&j);
	check_written(&b, "{\"k\\\"\\n\\u0001\":"
	    "\"a\\u0000b\xef\xbf\xbd\xc3\xbc\\t\"}",
	    "keys and values are escaped; invalid UTF-8 becomes U+FFFD");

	buf_adds(&b, "x");
	json_open(&j, &b, 0);
	json_int(&j, 1);
	buf_adds(&b, "\n");
	json_int(&j, 2);
	check_written(&b, "x1\n2",
	    "appends to what the buffer holds; no comma between top-level "
	    "values");
	buf_free(&b);
}

/* ------------------------------------------------------------------ */
/* name_check */

static void
check_name_ok(const char *name, const char *what)
{
	char	why[256] = "";
	int	r;

	r = name_check(name, why, sizeof why);
	if (r != 0)
		note("%s: %s", what, why);
	CHECK(r == 0, "name_check: %s is accepted", what);
}

static void
check_name_bad(const char *name, const char *reason, const char *what)
{
	char	why[256] = "";
	int	r;

	r = name_check(name, why, sizeof why);
	if (r == 0)
		note("%s: accepted", what);
	else if (!HAS(why, reason))
		note("%s: reason \"%s\"", what, why);
	CHECK(r == -1 && HAS(why, reason), "name_check: %s is refused: %s",
	    what, reason);
}

static void
test_name(void)
{
	char	long_name[NAME_MAX_BYTES + 2];
	char	utf8_long[NAME_MAX_BYTES + 1];
	char	why[8];
	size_t	i;

	check_name_ok("job", "\"job\"");
	check_name_ok("deploy/prod", "\"deploy/prod\"");
	check_name_ok("a:b", "\"a:b\"");
	check_name_ok("z\xc3\xbcrich", "UTF-8 \"zurich\" with u-umlaut");
	check_name_ok("\xe6\x97\xa5\xe6\x9c\xac", "CJK characters");
	check_name_ok("\xf0\x9f\x94\x92", "an emoji");
	check_name_ok("a[b]", "square brackets");
	check_name_ok("~!@#$%^&*()", "ASCII punctuation");

	memset(long_name, 'x', NAME_MAX_BYTES);
	long_name[NAME_MAX_BYTES] = '\0';
	check_name_ok(long_name, "a 255-byte name");
	long_name[NAME_MAX_BYTES] = 'x';
	long_name[NAME_MAX_BYTES + 1] = '\0';
	check_name_bad(long_name, "it is 256 bytes long; the limit is 255",
	    "a 256-byte name");

	/* 127 two-byte characters and an 'x': 255 bytes, 128 characters. */
	for (i = 0; i + 1 < NAME_MAX_BYTES; i += 2)
		memcpy(utf8_long + i, "\xc3\xbc", 2);
	utf8_long[NAME_MAX_BYTES - 1] = 'x';
	utf8_long[NAME_MAX_BYTES] = '\0';
	check_name_ok(utf8_long, "a 255-byte name of multi-byte characters");

	check_name_bad("", "it is empty", "the empty name");
	check_name_bad("abc def", "byte 4 is a space (0x20)", "a space");
	check_name_bad("a\tb", "byte 2 is a tab (0x09)", "a tab");
	check_name_bad("ab\n", "byte 3 is a newline (0x0a)", "a newline");
	check_name_bad("\rx", "byte 1 is a carriage return (0x0d)",
	    "a carriage return");
	check_name_bad("a\x01", "byte 2 is a control character (0x01)",
	    "control 0x01");
	check_name_bad("a\x1b[0m", "byte 2 is a control character (0x1b)",
	    "an escape sequence");
	check_name_bad("a{b}", "byte 2 is '{' (0x7b), reserved for Redis "
	    "Cluster hash tags", "'{'");
	check_name_bad("ab}", "byte 3 is '}' (0x7d), reserved for Redis "
	    "Cluster hash tags", "'}'");
	check_name_bad("del\x7f", "byte 4 is a control character (0x7f)",
	    "DEL 0x7f");
	check_name_bad("a\xc2\x85", "byte 2 is U+0085", "C1 control U+0085");
	check_name_bad("a\xc2\x80", "byte 2 is U+0080, a control",
	    "C1 control U+0080");
	check_name_bad("ab\xc2\x9f", "byte 3 is U+009F, a control",
	    "C1 control U+009F");
	check_name_bad("a\xc2\xa0z", "byte 2 is U+00A0, a space (0xc2 0xa0)",
	    "NBSP U+00A0");
	check_name_bad("x\xe3\x80\x80", "byte 2 is U+3000, a space "
	    "(0xe3 0x80 0x80)", "ideographic space U+3000");
	check_name_bad("\xe1\x9a\x80", "byte 1 is U+1680", "U+1680");
	check_name_bad("\xe2\x80\x80", "byte 1 is U+2000", "en quad U+2000");
	check_name_bad("\xe2\x80\x8a", "byte 1 is U+200A", "hair space U+200A");
	check_name_bad("\xe2\x80\xa8", "byte 1 is U+2028", "U+2028");
	check_name_bad("\xe2\x80\xa9", "byte 1 is U+2029", "U+2029");
	check_name_bad("\xe2\x80\xaf", "byte 1 is U+202F", "U+202F");
	check_name_bad("\xe2\x81\x9f", "byte 1 is U+205F", "U+205F");
	check_name_bad("deploy\xe2\x80\x8b", "byte 7 is U+200B, an invisible "
	    "format character (0xe2 0x80 0x8b)", "U+200B (zero width space)");
	check_name_bad("a\xe2\x80\xae", "byte 2 is U+202E, a bidirectional "
	    "text control", "U+202E (right-to-left override)");
	check_name_bad("\xef\xbb\xbfx", "byte 1 is U+FEFF", "U+FEFF (BOM)");
	check_name_bad("so\xc2\xad" "ft", "byte 3 is U+00AD, an invisible format "
	    "character (0xc2 0xad)", "U+00AD (soft hyphen)");
	check_name_bad("x\xf3\xa0\x80\x81", "byte 2 is U+E0001, an invisible "
	    "format character (0xf3 0xa0 0x80 0x81)", "U+E0001 (language tag)");
	check_name_bad("x\xd8\x9c", "byte 2 is U+061C, a bidirectional",
	    "U+061C (Arabic letter mark)");
	check_name_ok("\xe2\x80\x90", "U+2010 (a hyphen, visible)");
	check_name_ok("\xef\xbf\xbd", "U+FFFD (visible)");
	check_name_bad("abc\xff", "byte 4 (0xff) is not valid UTF-8",
	    "0xff");
	check_name_bad("a\x80", "byte 2 (0x80) is not valid UTF-8",
	    "a lone continuation byte");
	check_name_bad("a\xc0\x80", "byte 2 (0xc0) is not valid UTF-8",
	    "overlong C0 80");
	check_name_bad("\xe0\x80\xaf", "byte 1 (0xe0) is not valid UTF-8",
	    "overlong E0 80 AF");
	check_name_bad("\xf0\x80\x80\xaf", "byte 1 (0xf0) is not valid UTF-8",
	    "overlong F0 80 80 AF");
	check_name_bad("ok\xed\xa0\x80", "byte 3 (0xed) is not valid UTF-8",
	    "surrogate ED A0 80");
	check_name_bad("\xed\xbf\xbf", "byte 1 (0xed) is not valid UTF-8",
	    "surrogate ED BF BF");
	check_name_bad("\xf4\x90\x80\x80", "byte 1 (0xf4) is not valid UTF-8",
	    "U+110000");
	check_name_bad("\xf5\x80\x80\x80", "byte 1 (0xf5) is not valid UTF-8",
	    "lead byte F5");
	check_name_bad("ab\xe2\x82", "byte 3 (0xe2) is not valid UTF-8",
	    "truncated E2 82");
	check_name_bad("\xe2\x82x", "byte 1 (0xe2) is not valid UTF-8",
	    "E2 82 cut short by an ASCII byte");
	check_name_bad("a b{", "byte 2 is a space",
	    "two faults: the first one is named");

	CHECK(name_check("a b", why, sizeof why) == -1 &&
	    strlen(why) < sizeof why,
	    "name_check: a short why buffer is truncated, not overrun");
	CHECK(name_check("a b", NULL, 0) == -1,
	    "name_check: a NULL why is allowed");
}

/* ------------------------------------------------------------------ */
/* Escaping outside text */

static void
check_escape(const char *in, size_t len, const char *want, const char *what)
{
	struct buf	b;

	buf_init(&b);
	escape_add(&b, in, len);
	if (strcmp(b.p, want) != 0)
		note("%s: got \"%s\"", what, b.p);
	CHECK(strcmp(b.p, want) == 0, "escape_add: %s", what);
	buf_free(&b);
}

#define ESC(in, want, what)	check_escape(in, sizeof in - 1, want, what)

static void
test_escape(void)
{
	char	*d;

	ESC("plain text", "plain text", "printable ASCII is kept");
	ESC("caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x94\x92",
	    "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x94\x92",
	    "printable UTF-8 is kept");
	ESC("a\\b \"q\"", "a\\b \"q\"", "backslash and quote are kept");
	ESC("\x1b[2J\x1b[31mEVIL\x07", "\\x1b[2J\\x1b[31mEVIL\\x07",
	    "ESC and BEL");
	ESC("a\r\nb\tc\x7f", "a\\x0d\\x0ab\\x09c\\x7f",
	    "CR, LF, tab and DEL");
	ESC("a\0b", "a\\x00b", "a NUL inside the length");
	ESC("\xc2\x9b" "2J\xc2\x85", "\\u009B2J\\u0085", "C1 controls (CSI, NEL)");
	ESC("x\xe2\x80\xa8y\xe2\x80\xa9", "x\\u2028y\\u2029",
	    "line and paragraph separators");
	ESC("\xe2\x80\xae" "evil\xe2\x80\x8b", "\\u202Eevil\\u200B",
	    "bidi override and zero width space");
	ESC("t\xf3\xa0\x80\x81", "t\\U000E0001", "a code point past U+FFFF");
	ESC("\xff\xfe", "\\xff\\xfe", "bytes that are not UTF-8");
	ESC("\xe2\x82", "\\xe2\\x82", "a truncated sequence, byte by byte");
	ESC("\xed\xa0\x80", "\\xed\\xa0\\x80", "a surrogate");
	ESC("\xc0\xaf", "\\xc0\\xaf", "an overlong form");
	ESC("", "", "nothing");
	d = escape_dup(NULL);
	CHECK(d != NULL && *d == '\0', "escape_dup: NULL is \"\"");
	free(d);
	CHECK(escape_invisible(0x200b) != NULL && escape_invisible(0x41) == NULL &&
	    escape_invisible(0xe007f) != NULL && escape_invisible(0x2010) == NULL,
	    "escape_invisible: U+200B and tags are, A and U+2010 are not");
}

/* ------------------------------------------------------------------ */
/* Buffers, allocation, clocks */

static void
test_buf(void)
{
	struct buf	b;
	char		*s, want[2048];
	size_t		cap0;
	int		i, n;

	buf_init(&b);
	CHECK(b.p != NULL && b.len == 0 && b.p[0] == '\0',
	    "buf_init: an empty, terminated buffer");
	cap0 = b.cap;
	buf_adds(&b, "abc");
	buf_add(&b, "defXYZ", 3);
	buf_add(&b, NULL, 0);
	CHECK(b.len == 6 && strcmp(b.p, "abcdef") == 0,
	    "buf_add/buf_adds: append and stay terminated");
	buf_printf(&b, "-%d-%s", 42, "x");
	CHECK(b.len == 11 && strcmp(b.p, "abcdef-42-x") == 0,
	    "buf_printf: appends formatted text");

	want[0] = '\0';
	strcpy(want, "abcdef-42-x");
	for (i = 0; i < 100; i++) {
		buf_printf(&b, "[%03d]", i);
		n = (int)strlen(want);
		snprintf(want + n, sizeof want - (size_t)n, "[%03d]", i);
	}
	CHECK(b.cap > cap0 && b.len == strlen(want) && strcmp(b.p, want) == 0,
	    "buf_printf: grows past the initial capacity (%zu -> %zu)", cap0,
	    b.cap);
	buf_free(&b);
	CHECK(b.p == NULL && b.len == 0, "buf_free: leaves the buffer empty");

	buf_init(&b);
	buf_printf(&b, "%0600d", 7);
	CHECK(b.len == 600 && b.p[599] == '7' && b.p[600] == '\0' &&
	    b.p[0] == '0', "buf_printf: one print much larger than the buffer");
	buf_free(&b);

	memset(&b, 0, sizeof b);
	buf_adds(&b, "zeroed");
	CHECK(b.p != NULL && strcmp(b.p, "zeroed") == 0,
	    "buf_add: works on a zeroed struct too");
	buf_free(&b);

	s = xstrndup("abcdef", 3);
	CHECK(strcmp(s, "abc") == 0, "xstrndup: copies at most n bytes");
	free(s);
	s = xstrdup("rlock");
	CHECK(strcmp(s, "rlock") == 0, "xstrdup: copies");
	free(s);
	n = xasprintf(&s, "%s:%d", "db", 7);
	CHECK(n == 4 && strcmp(s, "db:7") == 0, "xasprintf: formats");
	free(s);
	s = xcalloc(4, 4);
	CHECK(s[0] == 0 && s[15] == 0, "xcalloc: zeroes");
	s = xrealloc(s, 64);
	s[63] = 1;
	free(s);
	free(xmalloc(0));
	CHECK(1, "xmalloc(0) and xrealloc: usable pointers");
}

static void
test_clock(void)
{
	int64_t	m1, m2, w;

	m1 = now_mono_ms();
	m2 = now_mono_ms();
	w = now_wall_ms();
	CHECK(m1 > 0 && m2 >= m1, "now_mono_ms: does not go backwards");
	/* 2020-01-01 and 2200-01-01: any sane wall clock is in between. */
	CHECK(w > INT64_C(1577836800000) && w < INT64_C(7258118400000),
	    "now_wall_ms: milliseconds since the epoch");
}

/* One config line: want 0/1/-1, and for 1 the key and value. */
static void
check_config(const char *text, int want, const char *key, const char *value)
{
	char		 line[256], *k = NULL, *v = NULL, why[160] = "";
	int		 rc;

	snprintf(line, sizeof line, "%s", text);
	rc = config_parse_line(line, &k, &v, why, sizeof why);
	if (want != 1) {
		CHECK(rc == want && (rc == 0 || why[0] != '\0'),
		    "config line '%s' gives %d", text, want);
		return;
	}
	CHECK(rc == 1 && strcmp(k, key) == 0 && strcmp(v, value) == 0,
	    "config line '%s' is %s = '%s'", text, key, value);
}

static void
test_sentinel_url(void)
{
	struct url	u;
	char		why[256];
	int		rc;

	rc = url_parse("redis-sentinel://s1,s2:26380,[::1]:5000/mymaster",
	    &u, why, sizeof why);
	CHECK(rc == 0 && u.scheme == URL_SENTINEL && u.nsentinels == 3 &&
	    strcmp(u.sentinels[0].host, "s1") == 0 &&
	    u.sentinels[0].port == 26379 && u.sentinels[1].port == 26380 &&
	    strcmp(u.sentinels[2].host, "::1") == 0 &&
	    u.sentinels[2].port == 5000 && strcmp(u.master, "mymaster") == 0 &&
	    u.db == -1, "url_parse: a sentinel list with default and given "
	    "ports and the master's name");
	CHECK(rc == 0 && strcmp(u.display, "redis-sentinel://s1:26379,"
	    "s2:26380,[::1]:5000/mymaster") == 0,
	    "url_parse: sentinel display is %s", rc == 0 ? u.display : "-");
	url_free(&u);
	rc = url_parse("redis-sentinel://al:s3cret@s1:1/m?db=4", &u, why,
	    sizeof why);
	CHECK(rc == 0 && strcmp(u.user, "al") == 0 &&
	    strcmp(u.password, "s3cret") == 0 && u.db == 4 &&
	    strstr(u.display, "s3cret") == NULL,
	    "url_parse: sentinel credentials and db; display without the "
	    "password");
	url_free(&u);
	rc = url_parse("rediss-sentinel://al:s3cret@s1,s2:1/m", &u, why,
	    sizeof why);
	CHECK(rc == 0 && u.scheme == URL_SENTINEL && u.tls &&
	    u.nsentinels == 2 && strcmp(u.display, "rediss-sentinel://al@"
	    "s1:26379,s2:1/m") == 0, "url_parse: rediss-sentinel:// is Sentinel "
	    "over TLS, displayed so");
	if (rc == 0) {
		struct url	m, a;

		url_retarget(&m, &u, "10.0.0.9", 6380);
		CHECK(m.scheme == URL_TLS && strcmp(m.password, "s3cret") == 0 &&
		    strcmp(m.display, "rediss://al@10.0.0.9:6380") == 0,
		    "url_retarget: the master a rediss-sentinel:// names is "
		    "rediss:// with the URL's credentials");
		url_free(&m);
		url_dup_anonymous(&a, &u);
		CHECK(a.user == NULL && a.password == NULL && a.tls &&
		    a.nsentinels == 2 && strcmp(a.display, "rediss-sentinel://"
		    "s1:26379,s2:1/m") == 0, "url_dup_anonymous: a copy without "
		    "the credentials");
		url_free(&a);
	}
	url_free(&u);
	rc = url_parse("redis-sentinel://s1/m", &u, why, sizeof why);
	if (rc == 0) {
		struct url	m;

		url_retarget(&m, &u, "h", 1);
		CHECK(m.scheme == URL_TCP && !u.tls, "url_retarget: the master "
		    "a redis-sentinel:// names is redis://");
		url_free(&m);
	}
	url_free(&u);
}

/* What doctor counts as a loopback server (no password warning). */
static void
test_loopback(void)
{
	static const struct { const char *host; int want; } c[] = {
		{ "127.0.0.1", 1 }, { "127.5.6.7", 1 }, { "::1", 1 },
		{ "::ffff:127.0.0.1", 1 }, { "localhost", 1 },
		{ "10.0.0.5", 0 }, { "192.0.2.1", 0 }, { "128.0.0.1", 0 },
		{ "2001:db8::1", 0 }, { "::ffff:10.0.0.1", 0 }, { "::", 0 },
		{ "0.0.0.0", 0 },
	};
	size_t	i;

	for (i = 0; i < sizeof c / sizeof c[0]; i++)
		CHECK(url_host_is_loopback(c[i].host) == c[i].want,
		    "url_host_is_loopback(%s) is %d", c[i].host, c[i].want);
}

static void
test_config(void)
{
	check_config("", 0, NULL, NULL);
	check_config("   \t", 0, NULL, NULL);
	check_config("# a comment", 0, NULL, NULL);
	check_config("   # indented comment = x", 0, NULL, NULL);
	check_config("url = redis://h:6379", 1, "url", "redis://h:6379");
	check_config("url=redis://h", 1, "url", "redis://h");
	check_config("  ttl   =   5s  ", 1, "ttl", "5s");
	check_config("--prefix = app:", 1, "prefix", "app:");
	check_config("url = redis://:p#w@h", 1, "url", "redis://:p#w@h");
	check_config("tls-ca = /etc/ssl/ca.pem", 1, "tls-ca",
	    "/etc/ssl/ca.pem");
	check_config("json = ", 1, "json", "");
	check_config("a = b = c", 1, "a", "b = c");
	check_config("no equals sign", -1, NULL, NULL);
	check_config(" = value", -1, NULL, NULL);
	check_config("URL = x", -1, NULL, NULL);
	check_config("tls_ca = x", -1, NULL, NULL);
	CHECK(config_bool("yes") == 1 && config_bool("TRUE") == 1 &&
	    config_bool("on") == 1 && config_bool("1") == 1,
	    "config_bool: yes, TRUE, on, 1 are true");
	CHECK(config_bool("no") == 0 && config_bool("False") == 0 &&
	    config_bool("off") == 0 && config_bool("0") == 0,
	    "config_bool: no, False, off, 0 are false");
	CHECK(config_bool("") == -1 && config_bool("2") == -1 &&
	    config_bool("yess") == -1, "config_bool: anything else is -1");
}

/* Both strings NULL, or both the same text. */
static int
same_str(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

static int
same_nodes(const struct url_node *a, int na, const struct url_node *b,
    int nb)
{
	int	i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (!same_str(a[i].host, b[i].host) || a[i].port != b[i].port)
			return 0;
	return 1;
}

/*
 * exec's guard gives the lock back from held_pack's bytes (guard-release.c):
 * every field of the target and of what held_clone takes of the lock comes
 * back as it was.  The structs of the target are filled positionally, as
 * held-pack.c rebuilds them: a field added to one fails this build until
 * it is given a value here, and then this check until it is packed.
 */
static void
test_held_pack(void)
{
	static struct url_node	 sentinels[] = { { "s1", 26379 },
				    { "s2", 26380 } };
	static struct url_node	 seeds[] = { { "c1", 7000 }, { "c2", 7001 },
				    { "c3", 7002 } };
	static struct tls_opts	 tls = { "/ca.pem", "/cert.pem", "/key.pem",
				    "server.example", 7 };
	struct url		 urls[2] = {
		{ URL_SENTINEL, "h0", 11, "/p0", "u0", "pw0", 3, "disp0",
		    sentinels, 2, "master0", 1, NULL, 0 },
		{ URL_TLS, "h1", 12, NULL, NULL, "pw1", -1, "disp1", NULL, 0,
		    NULL, 0, seeds, 3 },
	};
	struct redis_opts	 opts = { 1001, 1002, "pw-opts", &tls,
				    "sentinel-user", "sentinel-pw", 3, 4, 5,
				    1006 };
	struct held_target	 t = { "pre:", urls, 2, &opts };
	struct held_unpacked	 u;
	struct lock		 l, *b = &u.l;
	const struct url	*x, *y;
	char			*pack, *copy;
	size_t			 len, n;
	int			 i, ok, truncated = 0;

	memset(&l, 0, sizeof l);
	l.name = "job";
	snprintf(l.token, sizeof l.token, "tok-%d", 42);
	l.ttl_ms = 2001;
	l.fence = 2002;
	l.valid_until = 2003;
	l.acquired_at = 2004;
	l.taken_at = 2005;
	snprintf(l.run, sizeof l.run, "run-2006");
	l.won = 5;
	l.won_known = 1;
	l.fifo = 2;
	l.limit = 9;
	l.shared = 3;
	l.every_ms = 2010;
	l.retry_failed = 4;
	l.wait_replicas = 6;
	l.wait_timeout_ms = 2013;
	l.history_len = 14;
	l.history_ttl_ms = 2015;
	l.meta = (struct lock_meta){ "host", 2016, "user", "cmd line" };
	pack = held_pack(&l, &t, &len);
	CHECK(held_unpack(&u, pack, len) == 0, "held_unpack: a whole pack");
	CHECK(same_str(u.t.prefix, "pre:") && u.t.nurls == 2 &&
	    u.t.urls == u.urls && u.t.opts == &u.opts,
	    "held_unpack: the target's prefix and URLs");
	for (i = 0; i < 2 && u.t.nurls == 2; i++) {
		x = &urls[i];
		y = &u.t.urls[i];
		CHECK(y->scheme == x->scheme && same_str(y->host, x->host) &&
		    y->port == x->port && same_str(y->path, x->path) &&
		    same_str(y->user, x->user) &&
		    same_str(y->password, x->password) && y->db == x->db &&
		    same_str(y->display, x->display) &&
		    same_nodes(y->sentinels, y->nsentinels, x->sentinels,
		    x->nsentinels) && same_str(y->master, x->master) &&
		    y->tls == x->tls &&
		    same_nodes(y->seeds, y->nseeds, x->seeds, x->nseeds),
		    "held_unpack: URL %d, field by field", i);
	}
	CHECK(u.opts.connect_timeout_ms == 1001 && u.opts.timeout_ms == 1002 &&
	    same_str(u.opts.password, "pw-opts") &&
	    same_str(u.opts.sentinel_user, "sentinel-user") &&
	    same_str(u.opts.sentinel_password, "sentinel-pw") &&
	    u.opts.identify == 3 && u.opts.check_version == 4 &&
	    u.opts.offer_wait == 5 && u.opts.end_ms == 1006,
	    "held_unpack: redis_opts, field by field");
	CHECK(u.opts.tls == &u.tls && same_str(u.tls.ca, "/ca.pem") &&
	    same_str(u.tls.cert, "/cert.pem") &&
	    same_str(u.tls.key, "/key.pem") &&
	    same_str(u.tls.server_name, "server.example") &&
	    u.tls.insecure == 7, "held_unpack: tls_opts, field by field");
	CHECK(same_str(b->name, "job") && strcmp(b->token, "tok-42") == 0 &&
	    b->ttl_ms == 2001 && b->fence == 2002 && b->valid_until == 2003 &&
	    b->acquired_at == 2004 && b->taken_at == 2005 &&
	    strcmp(b->run, "run-2006") == 0 && b->won == 5 &&
	    b->won_known == 1 && b->fifo == 2 && b->limit == 9 &&
	    b->shared == 3 && b->every_ms == 2010 && b->retry_failed == 4 &&
	    b->wait_replicas == 6 && b->wait_timeout_ms == 2013 &&
	    b->history_len == 14 && b->history_ttl_ms == 2015 &&
	    same_str(b->meta.host, "host") && b->meta.pid == 2016 &&
	    same_str(b->meta.user, "user") &&
	    same_str(b->meta.command, "cmd line"),
	    "held_unpack: the lock's identity, field by field");
	held_unpacked_free(&u);
	/* No TLS, NULL strings: NULL again, not "". */
	opts.tls = NULL;
	opts.sentinel_user = NULL;
	secret_free(pack);
	pack = held_pack(&l, &t, &len);
	ok = held_unpack(&u, pack, len) == 0;
	CHECK(ok && u.opts.tls == NULL && u.opts.sentinel_user == NULL &&
	    u.t.urls[1].path == NULL && u.t.urls[0].seeds == NULL,
	    "held_unpack: no TLS and absent strings come back absent");
	if (ok)
		held_unpacked_free(&u);
	/* Cut anywhere, or one byte more: not a pack. */
	copy = xmalloc(len + 1);
	memcpy(copy, pack, len);
	copy[len] = 0;
	for (n = 0; n < len; n++)
		if (held_unpack(&u, copy, n) == 0) {
			truncated++;
			held_unpacked_free(&u);
		}
	CHECK(truncated == 0, "held_unpack: every cut pack is refused");
	CHECK(held_unpack(&u, copy, len + 1) == -1,
	    "held_unpack: a pack with a byte more is refused");
	copy[0] ^= 1;
	CHECK(held_unpack(&u, copy, len) == -1,
	    "held_unpack: a pack without the magic is refused");
	free(copy);
	secret_free(pack);
}

int
main(void)
{
	if ((out = open_memstream(&out_text, &out_len)) == NULL) {
		perror("open_memstream");
		return 1;
	}
	test_duration_parse();
	test_duration_format();
	test_url();
	test_url_mask();
	test_json();
	test_json_writer();
	test_name();
	test_escape();
	test_buf();
	test_clock();
	test_config();
	test_sentinel_url();
	test_loopback();
	test_held_pack();
	fclose(out);

	printf("1..%d\n", tests);
	fwrite(out_text, 1, out_len, stdout);
	free(out_text);
	if (fflush(stdout) != 0)
		return 1;
	return failures == 0 ? 0 : 1;
}
