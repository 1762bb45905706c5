/* url.c: the Redis URLs rlock accepts. */

/*
 * url_parse splits redis://, rediss:// and unix: URLs into a struct url and
 * builds a display form for messages.  Two rules hold on every path: the
 * password never reaches display or the reason for a refusal (so a reason
 * quotes only the scheme, a query parameter's name or a single stray
 * character, never a stretch of the URL that could be a mistyped secret),
 * and a failed parse leaves nothing allocated in *u.
 */

#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "url.h"
#include "util.h"

#define URL_DEFAULT_PORT	6379
#define URL_SCHEMES		"redis://, rediss://, unix://, redis-sentinel:// " \
				"or rediss-sentinel://"
#define SENTINEL_DEFAULT_PORT	26379

static void
say(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
say(char *why, size_t whylen, const char *fmt, ...)
{
	va_list	ap;

	if (why == NULL || whylen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Percent-decode len bytes of s into a new string, or return NULL on a
 * broken escape.  %00 is refused too: the result is a C string and a
 * password cut short at a NUL would fail to authenticate in a confusing way.
 */
static char *
decode_percent(const char *s, size_t len)
{
	char	*out, *o;
	size_t	 i;
	int	 hi, lo;

	out = o = xmalloc(len + 1);
	for (i = 0; i < len; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		if (len - i < 3)
			goto fail;
		if ((hi = hex_value(s[i + 1])) < 0 ||
		    (lo = hex_value(s[i + 2])) < 0)
			goto fail;
		if (hi == 0 && lo == 0)
			goto fail;
		*o++ = (char)(hi << 4 | lo);
		i += 2;
	}
	*o = '\0';
	return out;

fail:
	/* It may hold the start of a password. */
	explicit_bzero(out, len + 1);
	free(out);
	return NULL;
}

/* decode_percent, into memory a core dump leaves out (see util.h). */
static char *
decode_secret(const char *s, size_t len)
{
	char	*p, *q;

	if ((p = decode_percent(s, len)) == NULL)
		return NULL;
	q = secret_strdup(p);
	explicit_bzero(p, len);
	free(p);
	return q;
}

/*
 * Read a decimal in [min, max] from s up to end.  Returns -1 for empty,
 * non-digit or out-of-range text.
 */
static int
read_number(const char *s, const char *end, long long min, long long max,
    long long *out)
{
	long long	v = 0;

	if (s == end)
		return -1;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > max)
			return -1;
	}
	if (v < min)
		return -1;
	*out = v;
	return 0;
}

static int
is_host_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_';
}

static int
is_ipv6_char(char c)
{
	return isxdigit((unsigned char)c) || c == ':' || c == '.';
}

/*
 * Name a stray character without printing a byte that would garble the
 * terminal.
 */
static void
say_junk(char *why, size_t whylen, const char *what, char c)
{
	if (isprint((unsigned char)c))
		say(why, whylen, "unexpected '%c' %s", c, what);
	else
		say(why, whylen, "unexpected byte 0x%02x %s", (unsigned char)c,
		    what);
}

/* Split "user:password" (already cut from before the '@'). */
static int
parse_userinfo(const char *s, size_t len, struct url *u, char *why,
    size_t whylen)
{
	const char	*colon;
	size_t		 ulen;

	colon = memchr(s, ':', len);
	ulen = colon != NULL ? (size_t)(colon - s) : len;
	if (ulen != 0 && (u->user = decode_percent(s, ulen)) == NULL) {
		say(why, whylen, "bad percent-escape in the user name");
		return -1;
	}
	if (colon != NULL && len - ulen - 1 != 0) {
		u->password = decode_secret(colon + 1, len - ulen - 1);
		if (u->password == NULL) {
			say(why, whylen, "bad percent-escape in the password");
			return -1;
		}
	}
	return 0;
}

/*
 * Past "//" and the userinfo, for the redis:// and sentinel forms alike.
 * The last '@' ends the userinfo: DB and port cannot hold one, so a
 * password with an unencoded '@' or '/' still splits the right way.
 */
static int
parse_authority_start(const char **sp, struct url *u, char *why,
    size_t whylen)
{
	const char	*s = *sp, *at;

	if (strncmp(s, "//", 2) != 0) {
		say(why, whylen, "expected '//' after the scheme");
		return -1;
	}
	s += 2;
	if ((at = strrchr(s, '@')) != NULL) {
		if (parse_userinfo(s, (size_t)(at - s), u, why, whylen) != 0)
			return -1;
		s = at + 1;
	}
	*sp = s;
	return 0;
}

/*
 * The host at *sp, bracketed for IPv6, into u->host; *sp moves past it.
 * *bracketed says which it was.  0, or -1 with why filled.
 */
static int
parse_host(const char **sp, struct url *u, int *bracketed, char *why,
    size_t whylen)
{
	const char	*p = *sp, *h, *hend;

	if ((*bracketed = (*p == '['))) {
		h = ++p;
		while (is_ipv6_char(*p))
			p++;
		hend = p;
		if (*p != ']') {
			if (*p == '\0')
				say(why, whylen, "missing ']' after the IPv6 "
				    "address");
			else
				say_junk(why, whylen, "in the IPv6 address",
				    *p);
			return -1;
		}
		if (hend == h) {
			say(why, whylen, "missing host");
			return -1;
		}
		p++;
	} else {
		h = p;
		while (is_host_char(*p))
			p++;
		hend = p;
		if (hend == h && p[0] == ':' && p[1] == ':') {
			say(why, whylen, "missing host; put an IPv6 address "
			    "in brackets: [::1]");
			return -1;
		}
		if (hend == h && (*p == '\0' || *p == ':' || *p == '/')) {
			say(why, whylen, "missing host");
			return -1;
		}
	}
	if (*p != '\0' && *p != ':' && *p != '/') {
		if (*p == '?')
			say(why, whylen, "query parameters are not accepted "
			    "here; give the db as /N");
		else
			say_junk(why, whylen, "after the host", *p);
		return -1;
	}
	u->host = xstrndup(h, (size_t)(hend - h));
	*sp = p;
	return 0;
}

static int	parse_tcp(const char *, struct url *, char *, size_t);

/*
 * "h1:p1,h2:p2,...[/DB]" (past the userinfo): the seed nodes of one
 * Cluster, each with the default port if it names none.  The credentials
 * and the scheme are the URL's, for every seed.
 */
static int
parse_seeds(const char *s, struct url *u, char *why, size_t whylen)
{
	struct url	 node;
	const char	*p, *end, *tail;
	char		*piece;
	size_t		 len;
	int		 rc, i;

	tail = s + strcspn(s, "/?");
	for (p = s; p <= tail; p = end + 1) {
		end = p + strcspn(p, ",/?");
		len = (size_t)(end - p);
		if (len == 0) {
			say(why, whylen, "empty host in the seed list (write "
			    "redis://h1:7000,h2:7000,h3:7000)");
			return -1;
		}
		if (u->nseeds == URL_MAX_SEEDS) {
			say(why, whylen, "more than %d seed nodes; %d of a "
			    "cluster are enough", URL_MAX_SEEDS, URL_MAX_SEEDS);
			return -1;
		}
		xasprintf(&piece, "//%.*s", (int)len, p);
		memset(&node, 0, sizeof node);
		rc = parse_tcp(piece, &node, why, whylen);
		free(piece);
		if (rc != 0) {
			url_free(&node);
			return -1;
		}
		for (i = 0; i < u->nseeds; i++)
			if (strcasecmp(u->seeds[i].host, node.host) == 0 &&
			    u->seeds[i].port == node.port) {
				say(why, whylen, "seed %d is given twice in the "
				    "seed list", i + 1);
				url_free(&node);
				return -1;
			}
		u->seeds = xrealloc(u->seeds, (u->nseeds + 1) *
		    sizeof *u->seeds);
		u->seeds[u->nseeds].host = node.host;
		u->seeds[u->nseeds].port = node.port;
		u->nseeds++;
		node.host = NULL;
		url_free(&node);
		if (*end != ',')
			break;
	}
	/* The db and what follows, behind the first seed. */
	xasprintf(&piece, strchr(u->seeds[0].host, ':') ? "//[%s]:%d%s" :
	    "//%s:%d%s", u->seeds[0].host, u->seeds[0].port, tail);
	memset(&node, 0, sizeof node);
	rc = parse_tcp(piece, &node, why, whylen);
	free(piece);
	if (rc == 0) {
		u->host = node.host;
		u->port = node.port;
		u->db = node.db;
		node.host = NULL;
	}
	url_free(&node);
	return rc;
}

static int
parse_tcp(const char *s, struct url *u, char *why, size_t whylen)
{
	const char	*p, *q;
	long long	 v;
	int		 bracketed;

	if (parse_authority_start(&s, u, why, whylen) != 0)
		return -1;
	if (strstr(s, "://") != NULL) {
		say(why, whylen, "one scheme for every seed: write "
		    "redis://h1:7000,h2:7000 (rediss:// for TLS to all)");
		return -1;
	}
	if (memchr(s, ',', strcspn(s, "/?")) != NULL)
		return parse_seeds(s, u, why, whylen);
	p = s;
	if (parse_host(&p, u, &bracketed, why, whylen) != 0)
		return -1;

	u->port = URL_DEFAULT_PORT;
	if (*p == ':') {
		q = ++p;
		while (*p != '\0' && *p != '/' && *p != '?')
			p++;
		if (read_number(q, p, 1, 65535, &v) != 0) {
			if (p == q)
				say(why, whylen, "missing port after ':'");
			else if (!bracketed &&
			    memchr(q, ':', (size_t)(p - q)) != NULL)
				say(why, whylen, "bad port; put an IPv6 "
				    "address in brackets: [::1]");
			else
				say(why, whylen, "bad port: it must be a "
				    "number from 1 to 65535");
			return -1;
		}
		u->port = (int)v;
	}

	u->db = -1;
	if (*p == '/') {
		q = ++p;
		while (*p != '\0' && *p != '?')
			p++;
		/* A trailing "/" alone names no db. */
		if (p != q) {
			if (read_number(q, p, 0, INT32_MAX, &v) != 0) {
				say(why, whylen, "bad db: it must be a number "
				    "from 0 to 2147483647");
				return -1;
			}
			u->db = (int)v;
		}
	}
	if (*p == '?') {
		say(why, whylen, "query parameters are not accepted here; "
		    "give the db as /N");
		return -1;
	}
	return 0;
}

/* "db=N" is the only query parameter a unix: URL may carry. */
static int
parse_unix_query(const char *q, struct url *u, char *why, size_t whylen)
{
	const char	*end;
	size_t		 klen;
	long long	 v;

	for (;;) {
		end = q + strcspn(q, "&");
		klen = strcspn(q, "=&");
		if (klen != 2 || strncmp(q, "db", 2) != 0 || q[2] != '=') {
			if (klen == 0)
				say(why, whylen, "empty query parameter; only "
				    "db= is accepted");
			else
				say(why, whylen, "unknown query parameter "
				    "'%.*s'; only db= is accepted",
				    (int)(klen > 32 ? 32 : klen), q);
			return -1;
		}
		if (u->db != -1) {
			say(why, whylen, "db= is given twice");
			return -1;
		}
		if (read_number(q + 3, end, 0, INT32_MAX, &v) != 0) {
			say(why, whylen, "bad db: it must be a number from 0 "
			    "to 2147483647");
			return -1;
		}
		u->db = (int)v;
		if (*end == '\0')
			return 0;
		q = end + 1;
	}
}

/* Whether ",/" occurs in s up to end. */
static int
comma_slash(const char *s, const char *end)
{
	for (; s + 1 < end; s++)
		if (s[0] == ',' && s[1] == '/')
			return 1;
	return 0;
}

static int
parse_unix(const char *s, struct url *u, char *why, size_t whylen)
{
	const char	*end;

	/* "unix:///abs" and the shorter "unix:/abs" both name "/abs". */
	if (strncmp(s, "//", 2) == 0)
		s += 2;
	end = s + strcspn(s, "?");
	if (end == s) {
		say(why, whylen, "empty socket path");
		return -1;
	}
	/* "unix:///a.sock,/b.sock" is no seed list: a socket is one server. */
	if (end[-1] == ',' || comma_slash(s, end)) {
		say(why, whylen, "a unix:// URL names one socket; a seed list "
		    "(h1:7000,h2:7000) is for redis:// and rediss://");
		return -1;
	}
	if (*s != '/') {
		say(why, whylen, "the socket path must be absolute "
		    "(unix:///path/to/redis.sock)");
		return -1;
	}
	u->path = xstrndup(s, (size_t)(end - s));
	u->db = -1;
	if (*end == '?')
		return parse_unix_query(end + 1, u, why, whylen);
	return 0;
}

/* Does "host:port" or "[v6]:port" name a port? */
static int
has_port(const char *s, size_t len)
{
	const char	*close;

	if (len > 0 && *s == '[') {
		close = memchr(s, ']', len);
		return close != NULL && close + 1 < s + len && close[1] == ':';
	}
	return memchr(s, ':', len) != NULL;
}

static int
parse_sentinel(const char *s, struct url *u, char *why, size_t whylen)
{
	struct url	 node;
	const char	*slash, *p, *end, *q;
	char		*piece;
	size_t		 len;
	int		 rc;

	if (parse_authority_start(&s, u, why, whylen) != 0)
		return -1;
	if ((slash = strchr(s, '/')) == NULL) {
		say(why, whylen, "missing /MASTER after the sentinel addresses");
		return -1;
	}
	for (p = s; p <= slash; p = end + 1) {
		end = p + strcspn(p, ",/");
		len = (size_t)(end - p);
		if (len == 0) {
			say(why, whylen, "empty sentinel address");
			return -1;
		}
		xasprintf(&piece, "//%.*s", (int)len, p);
		memset(&node, 0, sizeof node);
		rc = parse_tcp(piece, &node, why, whylen);
		free(piece);
		if (rc == 0 && (node.user != NULL || node.password != NULL)) {
			say(why, whylen, "credentials go before the first "
			    "sentinel address");
			rc = -1;
		}
		if (rc != 0) {
			url_free(&node);
			return -1;
		}
		u->sentinels = xrealloc(u->sentinels, (u->nsentinels + 1) *
		    sizeof *u->sentinels);
		u->sentinels[u->nsentinels].host = node.host;
		u->sentinels[u->nsentinels].port = has_port(p, len) ?
		    node.port : SENTINEL_DEFAULT_PORT;
		u->nsentinels++;
		node.host = NULL;
		url_free(&node);
		if (*end == '/')
			break;
	}
	q = slash + 1;
	len = strcspn(q, "?");
	if (len == 0) {
		say(why, whylen, "missing the master's name after '/'");
		return -1;
	}
	/* "/m/2" is no master's name: the db goes in ?db=N. */
	if (memchr(q, '/', len) != NULL) {
		say(why, whylen, "a '/' after the master's name (the database "
		    "is given as ?db=N: redis-sentinel://HOST/%.*s?db=%.*s)",
		    (int)strcspn(q, "/"), q, (int)(len - strcspn(q, "/") - 1),
		    q + strcspn(q, "/") + 1);
		return -1;
	}
	u->master = xstrndup(q, len);
	u->host = xstrdup(u->sentinels[0].host);
	u->port = u->sentinels[0].port;
	u->db = -1;
	if (q[len] == '?')
		return parse_unix_query(q + len + 1, u, why, whylen);
	return 0;
}

void
url_build_display(struct url *u)
{
	struct buf	b;
	const char	*scheme;
	int		 i;

	free(u->display);
	buf_init(&b);
	if (u->scheme == URL_UNIX) {
		buf_printf(&b, "unix://%s", u->path);
		if (u->db >= 0)
			buf_printf(&b, "?db=%d", u->db);
	} else if (u->scheme == URL_SENTINEL) {
		buf_adds(&b, u->tls ? "rediss-sentinel://" : "redis-sentinel://");
		if (u->user != NULL)
			buf_printf(&b, "%s@", u->user);
		for (i = 0; i < u->nsentinels; i++)
			buf_printf(&b, strchr(u->sentinels[i].host, ':') ?
			    "%s[%s]:%d" : "%s%s:%d", i ? "," : "",
			    u->sentinels[i].host, u->sentinels[i].port);
		buf_printf(&b, "/%s", u->master);
		if (u->db >= 0)
			buf_printf(&b, "?db=%d", u->db);
	} else {
		scheme = u->scheme == URL_TLS ? "rediss" : "redis";
		buf_printf(&b, "%s://", scheme);
		if (u->user != NULL)
			buf_printf(&b, "%s@", u->user);
		for (i = 0; i + 1 < u->nseeds; i++)
			buf_printf(&b, strchr(u->seeds[i].host, ':') ?
			    "[%s]:%d," : "%s:%d,", u->seeds[i].host,
			    u->seeds[i].port);
		if (u->nseeds > 0)
			buf_printf(&b, strchr(u->seeds[i].host, ':') ?
			    "[%s]:%d" : "%s:%d", u->seeds[i].host,
			    u->seeds[i].port);
		else if (strchr(u->host, ':') != NULL)
			buf_printf(&b, "[%s]:%d", u->host, u->port);
		else
			buf_printf(&b, "%s:%d", u->host, u->port);
		if (u->db >= 0)
			buf_printf(&b, "/%d", u->db);
	}
	u->display = b.p;
}

int
url_parse(const char *s, struct url *u, char *why, size_t whylen)
{
	const char	*p;
	size_t		 n;
	int		 r;

	memset(u, 0, sizeof *u);
	u->db = -1;
	if (s == NULL || *s == '\0') {
		say(why, whylen, "empty URL");
		return -1;
	}
	/* Raw spaces and control bytes belong nowhere in a URL (%XX them). */
	for (p = s; *p != '\0'; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			say(why, whylen, "byte %zu (0x%02x) is a space or a "
			    "control character; percent-encode it",
			    (size_t)(p - s) + 1, (unsigned char)*p);
			return -1;
		}

	/* A scheme is a letter, then letters, digits, '+', '-' or '.'. */
	p = s;
	if (isalpha((unsigned char)*p)) {
		while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' ||
		    *p == '.')
			p++;
	}
	if (p == s || *p != ':') {
		say(why, whylen, "missing scheme; expected " URL_SCHEMES);
		return -1;
	}
	n = (size_t)(p - s);
	p++;

	if (n == 5 && strncasecmp(s, "redis", 5) == 0) {
		u->scheme = URL_TCP;
		r = parse_tcp(p, u, why, whylen);
	} else if (n == 6 && strncasecmp(s, "rediss", 6) == 0) {
		u->scheme = URL_TLS;
		r = parse_tcp(p, u, why, whylen);
	} else if (n == 14 && strncasecmp(s, "redis-sentinel", 14) == 0) {
		u->scheme = URL_SENTINEL;
		r = parse_sentinel(p, u, why, whylen);
	} else if (n == 15 && strncasecmp(s, "rediss-sentinel", 15) == 0) {
		u->scheme = URL_SENTINEL;
		u->tls = 1;
		r = parse_sentinel(p, u, why, whylen);
	} else if (n == 4 && strncasecmp(s, "unix", 4) == 0) {
		u->scheme = URL_UNIX;
		r = parse_unix(p, u, why, whylen);
	} else {
		say(why, whylen, "unknown scheme '%.*s'; expected " URL_SCHEMES,
		    (int)(n > 32 ? 32 : n), s);
		return -1;
	}
	if (r != 0)
		goto fail;
	url_build_display(u);
	return 0;

fail:
	url_free(u);
	return -1;
}

void
url_free(struct url *u)
{
	secret_free(u->password);	/* wiped */
	free(u->host);
	free(u->path);
	free(u->user);
	free(u->display);
	free(u->master);
	while (u->nsentinels > 0)
		free(u->sentinels[--u->nsentinels].host);
	free(u->sentinels);
	while (u->nseeds > 0)
		free(u->seeds[--u->nseeds].host);
	free(u->seeds);
	memset(u, 0, sizeof *u);
	u->db = -1;
}

void
url_retarget(struct url *dst, const struct url *u, const char *host, int port)
{
	memset(dst, 0, sizeof *dst);
	dst->scheme = u->scheme == URL_TLS ||
	    (u->scheme == URL_SENTINEL && u->tls) ? URL_TLS : URL_TCP;
	dst->host = xstrdup(host);
	dst->port = port;
	dst->user = u->user ? xstrdup(u->user) : NULL;
	dst->password = u->password ? secret_strdup(u->password) : NULL;
	dst->db = u->db;
	url_build_display(dst);
}

void
url_dup_anonymous(struct url *dst, const struct url *u)
{
	int	i;

	memset(dst, 0, sizeof *dst);
	dst->scheme = u->scheme;
	dst->host = u->host ? xstrdup(u->host) : NULL;
	dst->port = u->port;
	dst->path = u->path ? xstrdup(u->path) : NULL;
	dst->db = u->db;
	dst->master = u->master ? xstrdup(u->master) : NULL;
	dst->tls = u->tls;
	if (u->nsentinels > 0) {
		dst->sentinels = xcalloc(u->nsentinels, sizeof *dst->sentinels);
		for (i = 0; i < u->nsentinels; i++) {
			dst->sentinels[i].host = xstrdup(u->sentinels[i].host);
			dst->sentinels[i].port = u->sentinels[i].port;
		}
		dst->nsentinels = u->nsentinels;
	}
	url_build_display(dst);
}

static int
addr_is_loopback(const struct sockaddr *sa)
{
	const struct in6_addr	*a6;
	const unsigned char	*b;

	if (sa->sa_family == AF_INET) {
		b = (const unsigned char *)
		    &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
		return b[0] == 127;
	}
	if (sa->sa_family == AF_INET6) {
		a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a6))
			return 1;
		return IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127;
	}
	return 0;
}

int
url_host_is_loopback(const char *host)
{
	struct addrinfo	 hints, *res, *ai;
	int		 all = 1;

	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	if (host == NULL || getaddrinfo(host, NULL, &hints, &res) != 0)
		return 0;
	for (ai = res; ai != NULL; ai = ai->ai_next)
		if (!addr_is_loopback(ai->ai_addr))
			all = 0;
	freeaddrinfo(res);
	return all;
}

/* ------------------------------------------------- secrets in text */

/* Where a word of free text ends: it may sit in quotes or a message. */
#define WORD_END	" \t\r\n\"'<>`"

static int
is_scheme_char(int c)
{
	return isalnum(c) || c == '+' || c == '-' || c == '.';
}

/*
 * The userinfo is everything between "://" and the last '@' of the word
 * (a password with an unencoded '@' or '/' must still be found), and the
 * password what follows its first ':'.  A word without ':' before the '@'
 * names a user only, and is left alone.
 */
const char *
url_find_password(const char *s, const char **at)
{
	const char	*sep, *start, *end, *p, *last, *colon;

	for (sep = strstr(s, "://"); sep != NULL; sep = strstr(sep + 3, "://")) {
		if (sep == s || !is_scheme_char((unsigned char)sep[-1]))
			continue;
		start = sep + 3;
		end = start + strcspn(start, WORD_END);
		for (last = NULL, p = start; p < end; p++)
			if (*p == '@')
				last = p;
		if (last == NULL)
			continue;
		if ((colon = memchr(start, ':', (size_t)(last - start))) == NULL)
			continue;
		*at = last;
		return colon + 1;
	}
	return NULL;
}

char *
url_mask(const char *s, char *buf, size_t len)
{
	char	*m = url_mask_dup(s);

	if (len > 0)
		snprintf(buf, len, "%s", m);
	free(m);
	return buf;
}

char *
url_mask_dup(const char *s)
{
	struct buf	 b;
	const char	*pw, *at;

	buf_init(&b);
	while ((pw = url_find_password(s, &at)) != NULL) {
		buf_add(&b, s, (size_t)(pw - s));
		buf_adds(&b, URL_MASK);
		s = at;
	}
	buf_adds(&b, s);
	return b.p != NULL ? b.p : xstrdup("");
}
