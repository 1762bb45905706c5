/* redis-reply.c: what a server's reply may be, and what it says in words. */

/*
 * Every byte a server sends is framed here before hiredis's reader sees
 * it (redis_bound_scan), so that a hostile or broken server cannot make
 * rlock take all the memory there is; a whole reply becomes rlock's own
 * struct redis_reply (redis_convert).  An error reply becomes one line
 * that names the server, says what happened in words (a failover, a
 * reshard, a script's finding, an old server) and never shows the
 * password.
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis-private.h"
#include "util.h"

/* An item ended: count it in the arrays it ends, and the reply, if any. */
static void
bound_item(struct bound *b)
{
	while (b->depth > 0) {
		if (--b->left[b->depth - 1] > 0)
			return;
		b->depth--;
	}
	b->bytes = b->elements = 0;
}

/* A length or an integer line: a decimal that fits in a long long. */
static int
bound_number(const struct bound *b, long long *v)
{
	const char		*p = b->num;
	int			 neg = *p == '-';
	unsigned long long	 n = 0, max = LLONG_MAX;

	p += neg;
	max += (unsigned)neg;	/* LLONG_MIN's magnitude */
	if (*p == '\0')
		return -1;
	for (; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' ||
		    n > (max - (unsigned)(*p - '0')) / 10)
			return -1;
		n = n * 10 + (unsigned)(*p - '0');
	}
	*v = !neg ? (long long)n : n == max ? LLONG_MIN : -(long long)n;
	return 0;
}

/* A line ended: what it says the reply holds. */
static int
bound_line(struct bound *b, struct err *e)
{
	long long	n = 0;

	if (b->type != '+' && b->type != '-' && bound_number(b, &n) == -1) {
		err_set(e, ERR_PROTOCOL, "protocol error: '%c' followed by "
		    "no number, or one out of range", b->type);
		return -1;
	}
	switch (b->type) {
	case '$':
		if (n > MAX_REPLY_BYTES) {
			err_set(e, ERR_PROTOCOL, "the server announced a "
			    "string of %lld bytes; rlock takes at most %lld "
			    "MiB in one reply", n, MAX_REPLY_BYTES >> 20);
			return -1;
		}
		if (n >= 0) {
			b->bulk = n + 2;
			return 0;
		}
		break;
	case '*':
		if (n > MAX_REPLY_ELEMENTS - b->elements) {
			err_set(e, ERR_PROTOCOL, "the server announced an "
			    "array of %lld elements; rlock takes at most %lld "
			    "in one reply", n, MAX_REPLY_ELEMENTS);
			return -1;
		}
		if (n > 0 && b->depth == MAX_DEPTH) {
			err_set(e, ERR_PROTOCOL, "protocol error: arrays "
			    "nested more than %d deep", MAX_DEPTH);
			return -1;
		}
		if (n > 0) {
			b->elements += n;
			b->left[b->depth++] = n;
			return 0;
		}
		break;
	}
	if ((b->type == '$' || b->type == '*') && n < -1) {
		err_set(e, ERR_PROTOCOL, "protocol error: a length of %lld", n);
		return -1;
	}
	bound_item(b);
	return 0;
}

/* Look at n more bytes of what the server sent: 0, or -1 over a bound. */
int
redis_bound_scan(struct bound *b, const char *p, size_t n, struct err *e)
{
	size_t		i = 0, take;
	unsigned char	c;

	while (i < n) {
		if (b->bulk > 0) {
			take = n - i < (size_t)b->bulk ? n - i : (size_t)b->bulk;
			b->bulk -= (long long)take;
			b->bytes += (long long)take;
			i += take;
			if (b->bulk == 0)
				bound_item(b);
			continue;
		}
		c = (unsigned char)p[i++];
		b->bytes++;
		if (b->type == 0) {
			if (c == '\0' || strchr("+-:$*", c) == NULL) {
				err_set(e, ERR_PROTOCOL, "protocol error: a "
				    "reply cannot start with byte 0x%02x", c);
				return -1;
			}
			b->type = (char)c;
			b->linelen = 0;
			b->cr = 0;
			continue;
		}
		if (c == '\n' && b->cr) {
			if (b->type != '+' && b->type != '-')
				b->num[b->linelen - 1] = '\0';	/* the '\r' */
			if (bound_line(b, e) == -1)
				return -1;
			b->type = 0;
			continue;
		}
		b->cr = c == '\r';
		if (b->type == '+' || b->type == '-') {
			if (++b->linelen > MAX_LINE) {
				err_set(e, ERR_PROTOCOL, "the server sent a "
				    "line of more than %d bytes", MAX_LINE);
				return -1;
			}
			continue;
		}
		if (b->linelen >= MAX_NUMBER) {
			err_set(e, ERR_PROTOCOL, "protocol error: '%c' followed "
			    "by more than %d characters", b->type,
			    MAX_NUMBER - 1);
			return -1;
		}
		b->num[b->linelen++] = (char)c;
		b->num[b->linelen] = '\0';
	}
	if (b->bytes > MAX_REPLY_BYTES) {
		err_set(e, ERR_PROTOCOL, "the server sent a reply of more than "
		    "%lld MiB, the most rlock takes", MAX_REPLY_BYTES >> 20);
		return -1;
	}
	return 0;
}

struct redis_reply *
redis_convert(const redisReply *r)
{
	struct redis_reply	*rr = xcalloc(1, sizeof *rr);
	size_t			 i;

	switch (r->type) {
	case REDIS_REPLY_STRING:
		rr->type = REDIS_T_STRING;
		break;
	case REDIS_REPLY_STATUS:
		rr->type = REDIS_T_STATUS;
		break;
	case REDIS_REPLY_ERROR:
		rr->type = REDIS_T_ERROR;
		break;
	case REDIS_REPLY_INTEGER:
		rr->type = REDIS_T_INTEGER;
		rr->integer = r->integer;
		return rr;
	case REDIS_REPLY_ARRAY:
		rr->type = REDIS_T_ARRAY;
		rr->elements = r->elements;
		rr->element = xcalloc(r->elements ? r->elements : 1,
		    sizeof *rr->element);
		for (i = 0; i < r->elements; i++)
			rr->element[i] = redis_convert(r->element[i]);
		return rr;
	default:
		rr->type = REDIS_T_NIL;
		return rr;
	}
	rr->str = xstrndup(r->str, r->len);
	rr->len = r->len;
	return rr;
}

void
redis_reply_free(struct redis_reply *rr)
{
	size_t	i;

	if (rr == NULL)
		return;
	for (i = 0; i < rr->elements; i++)
		redis_reply_free(rr->element[i]);
	free(rr->element);
	free(rr->str);
	free(rr);
}

struct redis_reply *
redis_parse(const char *buf, size_t len)
{
	redisReader		*rd;
	redisReply		*reply = NULL;
	struct redis_reply	*rr = NULL;

	struct bound		 b;
	struct err		 e;

	memset(&b, 0, sizeof b);
	if (redis_bound_scan(&b, buf, len, &e) == -1 ||
	    (rd = redisReaderCreate()) == NULL)
		return NULL;
	if (redisReaderFeed(rd, buf, len) == REDIS_OK &&
	    redisReaderGetReply(rd, (void **)&reply) == REDIS_OK &&
	    reply != NULL) {
		rr = redis_convert(reply);
		freeReplyObject(reply);
	}
	redisReaderFree(rd);
	return rr;
}

void
redis_timeout_arg(char *buf, size_t len, int64_t ms)
{
	if (ms < 1)
		ms = 1;		/* a timeout of 0 blocks forever */
	snprintf(buf, len, "%lld.%03lld", (long long)(ms / 1000),
	    (long long)(ms % 1000));
}


/*
 * The oldest server rlock supports.  Every script first checks that the
 * server has redis.setresp, which came with 6.0, and answers
 * "RLOCK_OLDSERVER VERSION" if not (lib.lua): no extra round trip on a
 * supported server.  A command that begins with no script (a listing,
 * watch) learns the version from INFO server in its handshake instead.
 */
#define OLDEST_MAJOR	6
#define OLDEST		"6.0"

/* "URL: Redis 5.0.14 is older than 6.0, ..." for a refused server. */
static void
refuse_old(struct redis *r, enum err_kind kind, const char *version,
    struct err *e)
{
	size_t	n = strspn(version, "0123456789.");

	if (n == 0 || n > 16)
		err_set(e, kind, "%s: the server is older than Redis "
		    OLDEST ", the oldest rlock supports; upgrade the server",
		    r->url->display);
	else
		err_set(e, kind, "%s: Redis %.*s is older than " OLDEST
		    ", the oldest rlock supports; upgrade the server",
		    r->url->display, (int)n, version);
}

/*
 * Whether an INFO reply names a server older than OLDEST (e filled: an
 * answer that will stay, not a server away for a while).  Valkey gives a
 * redis_version too.
 */
int
redis_too_old(struct redis *r, const struct redis_reply *rr, struct err *e)
{
	const char	*p;

	if (rr->type != REDIS_T_STRING ||
	    (p = strstr(rr->str, "redis_version:")) == NULL)
		return 0;
	p += 14;
	if (*p < '0' || *p > '9' || atoi(p) >= OLDEST_MAJOR)
		return 0;
	refuse_old(r, ERR_REPLY, p, e);
	return 1;
}


/*
 * A script's error in words (see run() in lib.lua): the damage it found,
 * or the server's refusal without the script's name and line.  0 when
 * text is not a script's error.
 */
/*
 * A script stopped by the cluster because a key it used is not on this
 * node (its slot is migrating): Redis 6 "Lua script attempted to access a
 * non local key in a cluster node", 7.x "Script attempted to access a non
 * local key in a cluster node script: SHA...".  (Not "keys that do not
 * hash to the same slot": a script's mistake, which stays.)  rlock's
 * scripts declare the keys they use in KEYS, so the server refuses them
 * with TRYAGAIN before they run instead (see "Every key" in lib.lua):
 * this is for a key that still escapes that, and is sent again the same
 * way.
 */
int
redis_moving_in_script(const char *text)
{
	return strstr(text, "attempted to access a non local key") != NULL;
}

/*
 * What to do about a server that is away for a while.  -w rides through
 * it, but only acquire and exec take -w, and only their acquire is helped
 * by it: the other commands, and their extends and releases, are told
 * when trying again will work instead.
 */
static const char *
passing_remedy(const struct redis *r, int moving)
{
	if (r->opts->offer_wait)
		return "try again, or give -w to wait through it";
	return moving ? "try again once the slot has moved (redis-cli "
	    "--cluster fix, if a reshard died)" : "try again once it is over";
}

/*
 * What a server says for a while during a failover, a restart or a
 * reshard, in words (the code kept in brackets: the wait loop reads it,
 * see passing() in lock.c).  0 when text is none of those.
 */
int
redis_passing_words(const struct redis *r, const char *text, char *out, size_t len)
{
	static const struct {
		const char	*code, *words;
	} known[] = {
		{ "CLUSTERDOWN", "the cluster is down" },
		{ "TRYAGAIN", "the lock's slot is moving between nodes" },
		{ "LOADING", "the server is loading its data" },
		{ "MASTERDOWN", "the replica lost its master" },
		{ "READONLY", "the server is a replica now" },
		{ "BUSY ", "the server is busy running a script" },
		{ "MOVED ", "the cluster kept redirecting the request" },
		{ "ASK ", "the cluster kept redirecting the request" },
	};
	size_t	i;

	if (redis_moving_in_script(text)) {
		snprintf(out, len, "the lock's slot is moving between nodes "
		    "(TRYAGAIN): a reshard may be under way; %s",
		    passing_remedy(r, 1));
		return 1;
	}
	for (i = 0; i < sizeof known / sizeof *known; i++)
		if (strncmp(text, known[i].code, strlen(known[i].code)) == 0) {
			snprintf(out, len, "%s (%.*s): a failover, a restart or "
			    "a reshard may be under way; %s", known[i].words,
			    (int)strcspn(known[i].code, " "), known[i].code,
			    passing_remedy(r, strcmp(known[i].code,
			    "TRYAGAIN") == 0));
			return 1;
		}
	return 0;
}

int
redis_script_words(const char *text, char *out, size_t len)
{
	const char	*p, *b, *k;
	char		 why[256];
	size_t		 n;

	if (strncmp(text, "RLOCK_DAMAGED ", 14) == 0) {
		/* "KEY holds ...": the lock's name is inside KEY's braces. */
		p = text + 14;
		b = strchr(p, '{');
		k = b != NULL ? strchr(b, '}') : NULL;
		n = b != NULL && k != NULL && k < p + strcspn(p, " ") ?
		    (size_t)(k - b - 1) : 0;
		snprintf(out, len, "the lock %.*s%s is damaged: %s, which "
		    "rlock never writes (another program or a person did); "
		    "`rlock release --force %.*s` removes what its keys hold",
		    (int)n, n > 0 ? b + 1 : "", n > 0 ? "" : "(?)", p, (int)n,
		    n > 0 ? b + 1 : "NAME");
		return 1;
	}
	if (strncmp(text, "RLOCK_FAILED ", 13) == 0)
		text += 13;
	else if (strstr(text, "@user_script") == NULL &&
	    strncmp(text, "OOM ", 4) != 0)
		return 0;
	/* Redis 6: "ERR Error running script (...): @user_script:N: X". */
	if ((p = strstr(text, "@user_script:")) != NULL &&
	    (p = strstr(p, ": ")) != NULL)
		text = p + 2;
	snprintf(why, sizeof why, "%s", text);
	/* Redis 7: "X script: SHA, on @user_script:N." */
	if ((p = strstr(why, " script: ")) != NULL)
		why[p - why] = '\0';
	if (strncmp(why, "OOM ", 4) == 0)
		snprintf(out, len, "the server is out of memory: its used "
		    "memory is above maxmemory, and its policy (noeviction, "
		    "or nothing left to evict) refuses new writes; nothing was "
		    "taken: free memory on the server or raise its maxmemory");
	else
		snprintf(out, len, "a script failed: %s", why);
	return 1;
}

/*
 * An error reply as a message: "URL: WHAT TEXT".  Servers do not echo the
 * password back, but a message is only ever printed, so make sure.
 */
void
redis_reply_error(struct redis *r, const struct redis_reply *rr,
    const char *what, struct err *e)
{
	const char	*pw = r->url->password ? r->url->password :
			    r->opts->password;
	enum err_kind	 kind = ERR_REPLY;
	char		 text[512], words[640], *p;
	size_t		 n;

	snprintf(text, sizeof text, "%s", rr->str != NULL ? rr->str : "");
	/* A script's refusal of an old server (see refuse_old). */
	if ((p = strstr(text, "RLOCK_OLDSERVER ")) != NULL) {
		refuse_old(r, ERR_REPLY, p + 16, e);
		return;
	}
	/* Passing first: a script stopped by a migration is one. */
	if (redis_passing_words(r, text, words, sizeof words) ||
	    redis_script_words(text, words, sizeof words)) {
		err_set(e, kind, "%s: %s%s", r->url->display, what, words);
		return;
	}
	if (pw != NULL && (n = strlen(pw)) > 0)
		while ((p = strstr(text, pw)) != NULL) {
			memmove(p + 3, p + n, strlen(p + n) + 1);
			memcpy(p, "***", 3);
		}
	if (strncmp(text, "NOAUTH", 6) == 0 ||
	    strncmp(text, "WRONGPASS", 9) == 0 ||
	    strncmp(what, "authentication", 14) == 0)
		kind = ERR_AUTH;
	err_set(e, kind, "%s: %s%s%s", r->url->display, what, text,
	    strncmp(text, "NOAUTH", 6) == 0 ? " (give the password with "
	    "--password-file, RLOCK_PASSWORD or the URL)" : "");
}
