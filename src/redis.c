/* redis.c: one Redis server: its connection's whole life, and one request at a time. */

/*
 * A struct redis is one server as the user named it, and owns everything
 * it takes to talk to it: the transport (every address of the host, the
 * TLS handshake), AUTH, SELECT and INFO, the Sentinel lookup that says
 * where the master is, and the MOVED/ASK redirections of a Cluster.  All
 * of it moves forward in non-blocking steps: the caller polls the sockets
 * redis_pollfds names, until redis_deadline, and calls redis_step, which
 * does what it can and says pending, done or failed.  quorum.c runs one
 * poll() loop over N of them; nothing above it knows a socket exists.
 *
 * hiredis is used for exactly two things that every version has: the
 * RESP reader (redisReader) and the command formatter
 * (redisFormatCommandArgv).  A connection carries at most one request in
 * flight (quorum.c gets its parallelism from one connection per server);
 * the handshake's commands go out in the same write as the request, and
 * their replies are checked before the request's.  Any failure closes the
 * connection: a late reply to an abandoned request must never be taken for
 * the answer to the next one.  The next request connects again.
 *
 * Time: a connect (the Sentinel lookup, TCP, TLS, and the replies to the
 * handshake) is due within --connect-timeout of its start; a request's
 * reply within --timeout of its sending, plus what the command may block
 * on the server (BLPOP, WAIT).  Over both, each request has one deadline
 * of its own, fixed when it is started (redis_start): --connect-timeout
 * plus --timeout plus that blocking.  Every connect and every sending of
 * it -- a redirection, a door changed, a resend after TRYAGAIN or
 * NOSCRIPT, a reconnection -- is bounded by it and none moves it, so that
 * nodes that send a request back and forth for ever (a slot MIGRATING
 * toward a node that is not IMPORTING it) cost the caller that much and
 * no more.
 */

#include <hiredis/hiredis.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "duration.h"
#include "log.h"
#include "redis.h"
#include "transport.h"
#include "util.h"

/* How often one request may be redirected (MOVED/ASK) before giving up. */
#define MAX_REDIRECTS	5
/* The pauses before sending a request again after TRYAGAIN (ms). */
#define TRYAGAIN_FIRST_MS	10
#define TRYAGAIN_MAX_MS		200

/*
 * The doors of a Cluster: the nodes a request may start at, the seeds of
 * the URL first, then the nodes redirections named.  At most this many
 * (a tried-bitmask's bits).
 */
#define MAX_DOORS	64
#define CLUSTER_SLOTS	16384

/* ------------------------------------------------------------ bounds */

/*
 * What one reply may be.  rlock's largest (a log of 100,000 events, a
 * SCAN page) is a few MiB and far fewer elements; the bounds are there so
 * that a hostile or broken server cannot make rlock take all the memory
 * there is: hiredis keeps a bulk string whole until its last byte, and
 * allocates an array's declared length at once.  A status or error line
 * is short; an integer or length has at most 20 characters.
 */
#define MAX_REPLY_BYTES		(64LL << 20)
#define MAX_REPLY_ELEMENTS	(4LL << 20)
#define MAX_LINE		65536
#define MAX_NUMBER		21	/* with its '\r' */
#define MAX_DEPTH		7	/* hiredis's own nesting limit */

/*
 * Every byte is looked at here before hiredis sees it: the reply under
 * way is framed (its lines, the lengths they declare, its nesting), and
 * anything over the bounds fails the request before it is fed.
 */
struct bound {
	long long	bytes;		/* of the reply under way */
	long long	elements;
	long long	bulk;		/* a string's bytes still to come, CRLF too */
	long long	left[MAX_DEPTH]; /* elements still to come at each level */
	int		depth;
	char		type;		/* of the line under way; 0 between */
	char		num[MAX_NUMBER + 1];
	size_t		linelen;
	int		cr;		/* the last byte was '\r' */
};

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
static int
bound_scan(struct bound *b, const char *p, size_t n, struct err *e)
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

enum state {
	IDLE,		/* no connection */
	RESOLVING,	/* asking the sentinels where the master is */
	CONNECTING,	/* the transport: TCP, TLS */
	READY,		/* connected; the handshake goes with the next request */
};

/* The replies due on the connection, in the order they will come. */
enum due {
	DUE_AUTH,
	DUE_SELECT,
	DUE_INFO,	/* the server's run_id, to tell servers apart */
	DUE_ROLE,	/* a sentinel's master must say it is one */
	DUE_ASKING,
	DUE_BLPOP,	/* the wait before a script */
	DUE_MAIN,	/* the request's own */
};
#define MAX_DUE		8

struct redis {
	const struct url	*orig;	/* as configured */
	const struct url	*url;	/* where we are: orig or &target */
	struct url		 target; /* a sentinel's master, a MOVED node */
	const struct redis_opts	*opts;
	enum state		 state;
	struct transport	*t;
	redisReader		*reader;
	struct bound		 bound;		/* of what the reader is fed */
	int			 handshaken;	/* this transport's is sent */
	int			 check_role;	/* the master came from sentinels */
	char			 run_id[41];
	int			 connect_failed; /* the last failure was that */

	/* Bytes to write, and the replies due. */
	char			*out;
	size_t			 outlen, outoff;
	enum due		 due[MAX_DUE];
	int			 ndue;

	/* The request in flight. */
	const struct redis_req	*req;
	int			 pending;
	int			 ask;		/* ASKING before it, once */
	int			 asked;		/* it went with ASKING */
	int			 waited;	/* its BLPOP is done (redirected) */
	char			 wait_err[32];	/* its BLPOP's error code, or "" */
	int			 popped;	/* its BLPOP took an element */
	int			 holding;	/* until AUTH and SELECT answer */
	size_t			 body_at;	/* where out's request starts */
	int			 reached;	/* a request ever went out */
	int			 hops;		/* redirections in a row */
	int			 redirects;	/* in all, for this request */
	char			 hop_from[80];	/* its last one, for words */
	char			 hop_to[80];
	int			 hop_slot;
	unsigned		 conn_gen;	/* which connection this is */
	unsigned		 wrote_gen;	/* the last request's, if done */
	int64_t			 retry_at;	/* send it again then (TRYAGAIN); 0 */
	int64_t			 retry_pause;	/* the next pause before that */
	struct redis_reply	*reply;		/* once done */
	int64_t			 connect_deadline;
	int64_t			 deadline;	/* the request's reply */

	/* Sentinel lookup: the sentinel being asked, on a connection of its own. */
	struct redis		*sub;
	int			 sentinel;	/* its index */
	struct url		 sub_url;
	struct redis_opts	 sub_opts;
	struct redis_req	 sub_req;
	const char		*sub_argv[3];
	struct err		 sub_err;	/* why the last one failed */

	/*
	 * A Cluster (redis:// or rediss:// only): the doors, each a node a
	 * request may start at, and slot -> door as MOVED replies and
	 * answers taught it (-1: not known).  None until the URL names seeds
	 * or a redirection shows a cluster: a plain server never gets any.
	 */
	struct url		**doors;
	int			 ndoors;
	int			 door;		/* r->url is doors[door]; -1 not */
	int			 home;		/* where a request starts else */
	short			*slots;
	int			 slot;		/* the request's; -1 none */
	uint64_t		 tried;		/* doors it failed at */
	int64_t			 req_deadline;	/* the request ends by then */
	int64_t			 req_budget;	/* which is this after its start */
};

static int	step(struct redis *, struct err *);
static void	drop_connection(struct redis *);
static int	open_transport(struct redis *, struct err *);
static int	own_writes(const struct redis_req *);

/*
 * ms from now, but never past the request's own deadline (none when no
 * request is in flight: a connect made ahead of one).
 */
static int64_t
within_request(const struct redis *r, int64_t ms)
{
	int64_t	t = now_mono_ms() + ms;

	return r->pending && r->req_deadline < t ? r->req_deadline : t;
}

/* CRC16/XMODEM (polynomial 0x1021, no reflection, start 0): Cluster's. */
static unsigned
crc16(const char *p, size_t len)
{
	unsigned	crc = 0;
	int		k;

	while (len-- > 0) {
		crc ^= (unsigned)(unsigned char)*p++ << 8;
		for (k = 0; k < 8; k++)
			crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
	}
	return crc & 0xffff;
}

int
redis_key_slot(const char *key)
{
	const char	*open, *close;

	/* A non-empty {tag} decides, as for every rlock key. */
	if ((open = strchr(key, '{')) != NULL &&
	    (close = strchr(open + 1, '}')) != NULL && close > open + 1)
		return (int)(crc16(open + 1, (size_t)(close - open - 1)) %
		    CLUSTER_SLOTS);
	return (int)(crc16(key, strlen(key)) % CLUSTER_SLOTS);
}

/* ------------------------------------------------------------ doors */

/* The door at host:port, added if new: its index, or -1 (no room). */
static int
door_of(struct redis *r, const char *host, int port, int db)
{
	int	i;

	for (i = 0; i < r->ndoors; i++)
		if (r->doors[i]->port == port &&
		    strcasecmp(r->doors[i]->host, host) == 0)
			return i;
	if (r->ndoors == MAX_DOORS)
		return -1;
	r->doors = xrealloc(r->doors, (r->ndoors + 1) * sizeof *r->doors);
	r->doors[r->ndoors] = xcalloc(1, sizeof **r->doors);
	url_retarget(r->doors[r->ndoors], r->orig, host, port);
	r->doors[r->ndoors]->db = db;
	url_build_display(r->doors[r->ndoors]);
	return r->ndoors++;
}

/*
 * A cluster is seen (a redirection, or seeds): the URL's own node(s)
 * become the first doors, and the slot map starts empty.  Not behind a
 * Sentinel, whose master is whoever the sentinels name.
 */
static void
doors_init(struct redis *r)
{
	int	i;

	if (r->ndoors > 0 || (r->orig->scheme != URL_TCP &&
	    r->orig->scheme != URL_TLS))
		return;
	if (r->orig->nseeds == 0)
		door_of(r, r->orig->host, r->orig->port, r->orig->db);
	for (i = 0; i < r->orig->nseeds; i++)
		door_of(r, r->orig->seeds[i].host, r->orig->seeds[i].port,
		    r->orig->db);
	r->slots = xmalloc(CLUSTER_SLOTS * sizeof *r->slots);
	for (i = 0; i < CLUSTER_SLOTS; i++)
		r->slots[i] = -1;
	r->home = 0;
	r->door = -1;
}

/* Where the request starts: the slot's owner, else home, else any untried. */
static int
pick_door(const struct redis *r)
{
	int	d;

	if (r->pending && r->slot >= 0 && (d = r->slots[r->slot]) >= 0 &&
	    !(r->tried & (1ULL << d)))
		return d;
	if (!(r->tried & (1ULL << r->home)))
		return r->home;
	for (d = 0; d < r->ndoors; d++)
		if (!(r->tried & (1ULL << d)))
			return d;
	return -1;
}

/* Go through door d (a new connection); -1 with e filled if it cannot start. */
static int
enter_door(struct redis *r, int d, struct err *e)
{
	r->door = d;
	r->url = r->doors[d];
	r->connect_deadline = within_request(r, r->opts->connect_timeout_ms);
	return open_transport(r, e);
}

/*
 * The request failed at its door (a connect, a closed connection, no
 * reply in time): the node is taken for dead, whatever the map said it
 * served is forgotten, and the request starts again at another door
 * while it has time.  1 when it did (pending), 0 when there is none, 2
 * when the last door tried could not even be started (e says so).
 */
static int
next_door(struct redis *r, struct err *e)
{
	int	d, i, moved = 0;

	if (!r->pending || r->door < 0 || r->ndoors < 2 ||
	    own_writes(r->req) || (e->kind != ERR_REFUSED &&
	    e->kind != ERR_UNAVAILABLE && e->kind != ERR_TIMEOUT))
		return 0;
	r->tried |= 1ULL << r->door;
	for (i = 0; i < CLUSTER_SLOTS; i++)
		if (r->slots[i] == r->door)
			r->slots[i] = -1;
	while (now_mono_ms() < r->req_deadline && (d = pick_door(r)) >= 0) {
		log_verbose("%s; trying the cluster's node %s", e->msg,
		    r->doors[d]->display);
		drop_connection(r);
		r->ask = 0;
		r->waited = 1;	/* the wait is the caller's to make again */
		r->check_role = 0;
		if (r->home == r->door)
			r->home = d;	/* the dead one is no place to start */
		if (enter_door(r, d, e) == 0)
			return 1;
		if (e->kind != ERR_INTERRUPTED && e->kind != ERR_USAGE)
			err_prefix(e, "cannot connect to %s", r->url->display);
		moved = 2;
		r->tried |= 1ULL << d;
	}
	return moved;
}
static void	note_wait_error(struct redis *, const struct redis_reply *);

static struct redis_reply *
convert(const redisReply *r)
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
			rr->element[i] = convert(r->element[i]);
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
	if (bound_scan(&b, buf, len, &e) == -1 ||
	    (rd = redisReaderCreate()) == NULL)
		return NULL;
	if (redisReaderFeed(rd, buf, len) == REDIS_OK &&
	    redisReaderGetReply(rd, (void **)&reply) == REDIS_OK &&
	    reply != NULL) {
		rr = convert(reply);
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
static int
too_old(struct redis *r, const struct redis_reply *rr, struct err *e)
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

/* The run_id line of an INFO reply, into r->run_id ("" if none). */
static void
note_run_id(struct redis *r, const struct redis_reply *rr)
{
	const char	*p;
	size_t		 n;

	r->run_id[0] = '\0';
	if (rr->type != REDIS_T_STRING ||
	    (p = strstr(rr->str, "run_id:")) == NULL)
		return;
	p += 7;
	n = strcspn(p, "\r\n");
	if (n >= sizeof r->run_id)
		n = sizeof r->run_id - 1;
	memcpy(r->run_id, p, n);
	r->run_id[n] = '\0';
}

const char *
redis_display(const struct redis *r)
{
	return r->url->display;
}

const char *
redis_run_id(const struct redis *r)
{
	return r->run_id;
}

int
redis_connect_failed(const struct redis *r)
{
	return r->connect_failed;
}

int
redis_reached(const struct redis *r)
{
	return r->reached;
}

struct redis *
redis_new(const struct url *u, const struct redis_opts *opts)
{
	struct redis	*r = xcalloc(1, sizeof *r);

	r->orig = r->url = u;
	r->opts = opts;
	r->body_at = SIZE_MAX;
	r->door = r->slot = -1;
	if (u->nseeds > 0)
		doors_init(r);
	return r;
}

/* ------------------------------------------------------------ failing */


/*
 * Close the connection and drop what was queued for it, wiped first (AUTH's
 * password may be in there), and what it was due to answer.
 */
static void
drop_connection(struct redis *r)
{
	transport_close(r->t);
	r->t = NULL;
	if (r->out != NULL)
		explicit_bzero(r->out, r->outlen);
	free(r->out);
	r->out = NULL;
	r->outlen = r->outoff = 0;
	r->body_at = SIZE_MAX;
	r->ndue = 0;
}
/* Close the connection; the next request connects again. */
static void
disconnect(struct redis *r)
{
	drop_connection(r);
	redis_free(r->sub);
	r->sub = NULL;
	url_free(&r->sub_url);
	r->state = IDLE;
	r->handshaken = 0;
}

void
redis_abandon(struct redis *r)
{
	disconnect(r);
	r->pending = 0;
}

/*
 * Fail the request: e names the server ("cannot connect to URL: why" for
 * a connect, "URL: why" after), except for an interruption or a bad
 * setting of the user's (a certificate file), which stand alone.
 */
static int
fail(struct redis *r, struct err *e, int connecting)
{
	size_t	n;
	int	others = 0, i, rc;

	if (e->kind != ERR_INTERRUPTED && e->kind != ERR_USAGE) {
		if (connecting)
			err_prefix(e, "cannot connect to %s", r->url->display);
		else
			err_prefix(e, "%s", r->url->display);
	}
	if ((rc = next_door(r, e)) == 1)
		return 0;
	connecting |= rc == 2;
	for (i = 0; i < r->ndoors; i++)
		others += i != r->door && (r->tried & (1ULL << i));
	if (others > 0 && (n = strlen(e->msg)) < sizeof e->msg)
		snprintf(e->msg + n, sizeof e->msg - n, " (%d nodes of the "
		    "cluster tried)", others + 1);
	r->connect_failed = connecting;
	redis_abandon(r);
	return -1;
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
static int
moving_in_script(const char *text)
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
static int
passing_words(const struct redis *r, const char *text, char *out, size_t len)
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

	if (moving_in_script(text)) {
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
	if (passing_words(r, text, words, sizeof words) ||
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

/* ------------------------------------------------------------ sending */

/* Queue argv to be written, its reply due as d. */
static int
queue(struct redis *r, enum due d, int argc, const char **argv,
    const size_t *argvlen, struct err *e)
{
	char	*cmd;
	int	 len;

	if ((len = redisFormatCommandArgv(&cmd, argc, argv, argvlen)) < 0) {
		err_set(e, ERR_SOFTWARE, "cannot format a Redis command");
		return -1;
	}
	r->out = xrealloc(r->out, r->outlen + (size_t)len);
	memcpy(r->out + r->outlen, cmd, (size_t)len);
	r->outlen += (size_t)len;
	if (d == DUE_AUTH)	/* leave the password in no freed memory */
		explicit_bzero(cmd, (size_t)len);
	free(cmd);
	r->due[r->ndue++] = d;
	return 0;
}

/* EVALSHA (or, after NOSCRIPT, EVAL) of the request's script. */
static int
queue_script(struct redis *r, int use_sha, struct err *e)
{
	const struct redis_req	 *q = r->req;
	const char		**argv;
	char			  nk[16];
	int			  argc = 3 + q->nkeys + q->nargs, i, rc;

	argv = xcalloc(argc, sizeof *argv);
	argv[0] = use_sha ? "EVALSHA" : "EVAL";
	argv[1] = use_sha ? q->script->sha : q->script->body;
	snprintf(nk, sizeof nk, "%d", q->nkeys);
	argv[2] = nk;
	for (i = 0; i < q->nkeys; i++)
		argv[3 + i] = q->keys[i];
	for (i = 0; i < q->nargs; i++)
		argv[3 + q->nkeys + i] = q->args[i];
	rc = queue(r, DUE_MAIN, argc, argv, NULL, e);
	free(argv);
	return rc;
}

/*
 * AUTH (with the URL's user, if any), SELECT the URL's db, INFO server to
 * tell servers apart in a quorum (or to refuse an old server before a
 * command that sends no script), and ROLE for a master the sentinels
 * named: the first request on a new connection goes behind them.
 */
static int
queue_handshake(struct redis *r, struct err *e)
{
	const char	*password = r->url->password ? r->url->password :
			    r->opts->password;
	const char	*argv[3];
	char		 db[16];
	int		 argc = 0, rc = 0;

	if (password != NULL) {
		argv[argc++] = "AUTH";
		if (r->url->user != NULL)
			argv[argc++] = r->url->user;
		argv[argc++] = password;
		rc |= queue(r, DUE_AUTH, argc, argv, NULL, e);
	}
	if (r->url->db > 0) {
		snprintf(db, sizeof db, "%d", r->url->db);
		argv[0] = "SELECT";
		argv[1] = db;
		rc |= queue(r, DUE_SELECT, 2, argv, NULL, e);
	}
	if (r->opts->identify || r->opts->check_version) {
		argv[0] = "INFO";
		argv[1] = "server";
		rc |= queue(r, DUE_INFO, 2, argv, NULL, e);
	}
	if (r->check_role) {
		argv[0] = "ROLE";
		rc |= queue(r, DUE_ROLE, 1, argv, NULL, e);
	}
	r->handshaken = 1;
	return rc;
}

/* Whether an AUTH or SELECT reply is still due. */
static int
authenticating(const struct redis *r)
{
	int	i;

	for (i = 0; i < r->ndue; i++)
		if (r->due[i] == DUE_AUTH || r->due[i] == DUE_SELECT)
			return 1;
	return 0;
}

/* The request itself: ASKING, the BLPOP, the command or script. */
static int
queue_body(struct redis *r, struct err *e)
{
	const struct redis_req	*q = r->req;
	const char		*argv[4];
	char			 secs[32];
	int			 argc;

	r->holding = 0;
	r->body_at = r->outlen;
	r->asked = r->ask;
	if (r->ask) {
		argv[0] = "ASKING";
		if (queue(r, DUE_ASKING, 1, argv, NULL, e) == -1)
			return -1;
		r->ask = 0;
	}
	r->deadline = within_request(r, r->opts->timeout_ms + q->extra_ms);
	if (q->wait_key != NULL && !r->waited) {
		redis_timeout_arg(secs, sizeof secs, q->wait_ms);
		argc = 0;
		argv[argc++] = "BLPOP";
		argv[argc++] = q->wait_key;
		if (q->wait_key2 != NULL)
			argv[argc++] = q->wait_key2;
		argv[argc++] = secs;
		if (queue(r, DUE_BLPOP, argc, argv, NULL, e) == -1)
			return -1;
		r->deadline = within_request(r, r->opts->timeout_ms +
		    q->extra_ms + (q->wait_ms < 1 ? 1 : q->wait_ms));
	}
	if (q->script != NULL)
		return queue_script(r, 1, e);
	return queue(r, DUE_MAIN, q->argc, q->argv, q->argvlen, e);
}

/*
 * The request, behind what a new connection needs.  It waits for the
 * replies to AUTH and SELECT: sent behind a failed AUTH, it would run as
 * the default user, and behind a failed SELECT, in db 0.  INFO and ROLE
 * need no such wait.
 */
static int
queue_request(struct redis *r, struct err *e)
{
	if (!r->handshaken && queue_handshake(r, e) == -1)
		return -1;
	if (authenticating(r)) {
		/* Until they answer, the connect's bound is the one. */
		r->holding = 1;
		r->deadline = r->connect_deadline;
		return 0;
	}
	return queue_body(r, e);
}

/* Write what is queued, as far as the socket takes it now. */
static int
flush(struct redis *r, struct err *e)
{
	ssize_t	n;

	while (r->outoff < r->outlen) {
		n = transport_write(r->t, r->out + r->outoff,
		    r->outlen - r->outoff, e);
		if (n == -1)
			return -1;
		if (n == 0)
			return 0;
		r->outoff += (size_t)n;
		if (r->outoff > r->body_at)
			r->reached = 1;
	}
	/* Wipe it: AUTH's password may be in there. */
	if (r->out != NULL)
		explicit_bzero(r->out, r->outlen);
	free(r->out);
	r->out = NULL;
	r->outlen = r->outoff = 0;
	r->body_at = SIZE_MAX;
	return 0;
}

/* ------------------------------------------------------------ connecting */

static int
new_reader(struct redis *r, struct err *e)
{
	if (r->reader != NULL)
		redisReaderFree(r->reader);
	memset(&r->bound, 0, sizeof r->bound);
	if ((r->reader = redisReaderCreate()) == NULL) {
		err_set(e, ERR_SOFTWARE, "out of memory");
		return -1;
	}
	return 0;
}

/* Open the transport to r->url. */
static int
open_transport(struct redis *r, struct err *e)
{
	if (new_reader(r, e) == -1 ||
	    (r->t = transport_open(r->url, r->opts->tls, e)) == NULL)
		return -1;
	r->handshaken = 0;
	r->state = CONNECTING;
	r->conn_gen++;
	return 0;
}

/* Ask sentinel r->sentinel where the master is, on a connection of its own. */
static int
ask_sentinel(struct redis *r, struct err *e)
{
	const struct url	*u = r->orig;
	int64_t			 left = r->connect_deadline - now_mono_ms();

	url_free(&r->sub_url);
	/* rediss-sentinel://: TLS to the sentinel too, with the --tls-* files. */
	url_retarget(&r->sub_url, u, u->sentinels[r->sentinel].host,
	    u->sentinels[r->sentinel].port);
	secret_free(r->sub_url.password);
	r->sub_url.password = NULL;
	r->sub_url.db = -1;
	r->sub_opts = *r->opts;
	r->sub_opts.password = NULL;
	r->sub_opts.tls = u->tls ? r->opts->tls : NULL;
	/*
	 * The sentinels' own credentials, when given, go first; else they get
	 * no password unless they ask (sentinel_answer): the URL's userinfo
	 * is the master's.
	 */
	if (r->opts->sentinel_password != NULL) {
		free(r->sub_url.user);
		r->sub_url.user = r->opts->sentinel_user != NULL ?
		    xstrdup(r->opts->sentinel_user) : NULL;
		url_build_display(&r->sub_url);
		r->sub_opts.password = r->opts->sentinel_password;
	}
	r->sub_opts.identify = 0;
	r->sub_opts.check_version = 0;
	if (left < 1)
		left = 1;
	r->sub_opts.connect_timeout_ms = left;
	if (r->sub_opts.timeout_ms > left)
		r->sub_opts.timeout_ms = left;
	r->sub_argv[0] = "SENTINEL";
	r->sub_argv[1] = "GET-MASTER-ADDR-BY-NAME";
	r->sub_argv[2] = u->master;
	memset(&r->sub_req, 0, sizeof r->sub_req);
	r->sub_req.argc = 3;
	r->sub_req.argv = r->sub_argv;
	r->sub = redis_new(&r->sub_url, &r->sub_opts);
	return redis_start(r->sub, &r->sub_req, e);
}

/* The sentinel's answer: 1 the master is known, 0 ask again, -1 this one failed. */
static int
sentinel_answer(struct redis *r, struct redis_reply *rr, struct err *e)
{
	const struct url	*u = r->orig;
	const char		*pw = u->password ? u->password :
				    r->opts->password;
	struct url		 master;
	char			*end;
	long			 port;

	if (rr->type == REDIS_T_ERROR && strncmp(rr->str, "NOAUTH", 6) == 0 &&
	    pw != NULL && r->sub_opts.password == NULL) {
		/* It wants a password after all: AUTH, and ask again. */
		r->sub_opts.password = pw;
		r->sub->handshaken = 0;
		return redis_start(r->sub, &r->sub_req, e) == -1 ? -1 : 0;
	}
	/* {host, port}, the port a number in range. */
	if (rr->type == REDIS_T_ARRAY && rr->elements == 2 &&
	    rr->element[0]->type == REDIS_T_STRING &&
	    rr->element[1]->type == REDIS_T_STRING &&
	    (port = strtol(rr->element[1]->str, &end, 10)) > 0 &&
	    port <= 65535 && *end == '\0') {
		url_retarget(&master, u, rr->element[0]->str, (int)port);
		url_free(&r->target);
		r->target = master;
		r->url = &r->target;
		return 1;
	}
	if (rr->type == REDIS_T_ERROR && (strncmp(rr->str, "NOAUTH", 6) == 0 ||
	    strncmp(rr->str, "WRONGPASS", 9) == 0)) {
		err_set(e, ERR_AUTH, "sentinel %s: %s (give the sentinels' "
		    "password with --sentinel-password-file or "
		    "RLOCK_SENTINEL_PASSWORD)", r->sub_url.display, rr->str);
		return -1;
	}
	err_set(e, ERR_REPLY, "sentinel %s does not know master '%s'%s%s",
	    r->sub_url.display, u->master,
	    rr->type == REDIS_T_ERROR ? ": " : "",
	    rr->type == REDIS_T_ERROR ? rr->str : "");
	return -1;
}

/*
 * One step of the Sentinel lookup: the sentinels are asked in order, each
 * within what is left of the connect time.  1 with the transport to the
 * master under way, 0 pending, -1 (e filled) when none could say.
 */
static int
step_sentinel(struct redis *r, struct err *e)
{
	struct redis_reply	*rr;
	char			 msg[sizeof r->sub_err.msg];
	int			 rc;

	for (;;) {
		if (r->sub == NULL && ask_sentinel(r, &r->sub_err) == -1)
			rc = -1;
		else if ((rc = redis_step(r->sub, &r->sub_err)) == 0)
			return 0;
		if (rc == 1) {
			rr = redis_take(r->sub);
			rc = sentinel_answer(r, rr, &r->sub_err);
			redis_reply_free(rr);
			if (rc == 0)
				continue;
		}
		/* Each sentinel has what is left of the connect's time. */
		if (rc == -1 && r->sub_err.kind == ERR_TIMEOUT)
			err_set(&r->sub_err, ERR_TIMEOUT, "sentinel %s did not "
			    "answer within the --connect-timeout",
			    r->sub_url.display);
		/* A sentinel that refuses what it was sent: say which. */
		if (rc == -1 && r->sub_err.kind == ERR_AUTH &&
		    strstr(r->sub_err.msg, "RLOCK_SENTINEL_PASSWORD") == NULL) {
			snprintf(msg, sizeof msg, "%s", r->sub_err.msg);
			err_set(&r->sub_err, ERR_AUTH, "sentinel %.320s (it was "
			    "sent the %s password; give the sentinels' own with "
			    "--sentinel-password-file or RLOCK_SENTINEL_PASSWORD)",
			    msg, r->opts->sentinel_password != NULL ?
			    "sentinels'" : "master's");
		}
		/* A TLS-only sentinel hangs up on plain text at once. */
		if (rc == -1 && !r->orig->tls &&
		    r->sub_err.kind == ERR_UNAVAILABLE &&
		    (strstr(r->sub_err.msg, "reset by peer") != NULL ||
		    strstr(r->sub_err.msg, "closed by the server") != NULL)) {
			snprintf(msg, sizeof msg, "%s", r->sub_err.msg);
			err_set(&r->sub_err, ERR_UNAVAILABLE, "%.400s (if the "
			    "sentinels speak TLS, use rediss-sentinel://)",
			    msg);
		}
		redis_free(r->sub);
		r->sub = NULL;
		if (rc == 1) {
			url_free(&r->sub_url);
			r->check_role = 1;
			return open_transport(r, e) == -1 ? -1 : 1;
		}
		if (r->sub_err.kind == ERR_INTERRUPTED ||
		    ++r->sentinel >= r->orig->nsentinels) {
			*e = r->sub_err;
			return -1;
		}
	}
}

/*
 * A Cluster: the first door that can be started (a name that does not
 * resolve fails at once), from the slot's owner or home on.
 */
static int
enter_any_door(struct redis *r, struct err *e)
{
	int	d, k;

	err_set(e, ERR_UNAVAILABLE, "no node of the cluster left to try");
	if (!r->pending)
		r->tried = 0;	/* a connect ahead of any request */
	if ((d = pick_door(r)) < 0)
		d = r->home;
	for (k = 0; k < r->ndoors; k++, d = (d + 1) % r->ndoors) {
		if (r->pending && (r->tried & (1ULL << d)))
			continue;
		if (enter_door(r, d, e) == 0) {
			if (r->home != d && k > 0)
				r->home = d;
			return 0;
		}
		r->tried |= 1ULL << d;
		if (k + 1 < r->ndoors)
			log_verbose("cannot connect to %s: %s; trying the "
			    "cluster's next node", r->doors[d]->display, e->msg);
	}
	return -1;
}

/* Start connecting to where the URL says (asking the sentinels first). */
static int
begin_connect(struct redis *r, struct err *e)
{
	r->connect_deadline = within_request(r, r->opts->connect_timeout_ms);
	r->check_role = 0;
	r->url = r->orig;	/* not a node a redirection named */
	r->door = -1;
	/* A Cluster: the slot's owner if known, else the last door that answered. */
	if (r->ndoors > 0)
		return enter_any_door(r, e);
	if (r->orig->scheme == URL_SENTINEL) {
		r->sentinel = 0;
		err_clear(&r->sub_err);
		r->state = RESOLVING;
		return 0;
	}
	return open_transport(r, e);
}

int
redis_prepare(struct redis *r, struct err *e)
{
	if (r->state == READY && !r->pending && !transport_idle_ok(r->t))
		disconnect(r);
	if (r->state != IDLE)
		return 0;
	if (begin_connect(r, e) == -1)
		return fail(r, e, 1);
	return 0;
}

/* ------------------------------------------------------------ replies */

/* The next whole reply, if one has come: 1, 0 none yet, -1 failed. */
static int
next_reply(struct redis *r, struct redis_reply **out, struct err *e)
{
	redisReply	*reply = NULL;
	char		 buf[16384];
	ssize_t		 n;

	for (;;) {
		if (redisReaderGetReply(r->reader, (void **)&reply) != REDIS_OK) {
			err_set(e, ERR_PROTOCOL, "protocol error: %s",
			    r->reader->errstr);
			return -1;
		}
		if (reply != NULL)
			break;
		/*
		 * A server that keeps sending keeps this loop going: the
		 * deadline is the caller's to enforce, so go back to it.
		 */
		if (now_mono_ms() >= redis_deadline(r))
			return 0;
		if ((n = transport_read(r->t, buf, sizeof buf, e)) <= 0)
			return (int)n;
		if (bound_scan(&r->bound, buf, (size_t)n, e) == -1)
			return -1;
		redisReaderFeed(r->reader, buf, (size_t)n);
	}
	*out = convert(reply);
	freeReplyObject(reply);
	return 1;
}

/* A handshake reply: 0 fine, -1 the connection is no good (e filled). */
static int
handshake_reply(struct redis *r, enum due d, struct redis_reply *rr,
    struct err *e)
{
	static const char *const what[] = {
		[DUE_AUTH] = "authentication failed: ",
		[DUE_SELECT] = "SELECT failed: ",
		[DUE_INFO] = "INFO failed (a quorum needs it to tell servers "
		    "apart): ",
		[DUE_ROLE] = "ROLE failed: ",
	};

	/* INFO asked only for the version may be refused (ACL). */
	if (rr->type == REDIS_T_ERROR && d == DUE_INFO && !r->opts->identify)
		return 0;
	if (rr->type == REDIS_T_ERROR && d != DUE_ASKING) {
		redis_reply_error(r, rr, what[d], e);
		return -1;
	}
	if (d == DUE_INFO && too_old(r, rr, e))
		return -1;
	if (d == DUE_INFO)
		note_run_id(r, rr);
	if (d == DUE_ROLE && !(rr->type == REDIS_T_ARRAY && rr->elements > 0 &&
	    rr->element[0]->type == REDIS_T_STRING &&
	    strcmp(rr->element[0]->str, "master") == 0)) {
		err_set(e, ERR_REPLY, "%s: the sentinels name %s as master "
		    "'%s', but it is not a master (a failover may be under "
		    "way; try again)", r->orig->display, r->url->display,
		    r->orig->master);
		return -1;
	}
	return 0;
}

/*
 * "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381": move to that
 * node (same credentials and TLS) and send the request there again; an
 * ASK redirection is for this one request and wants ASKING first.
 */
static int
redirect(struct redis *r, const char *text, struct err *e)
{
	struct url	 to;
	const char	*addr, *colon;
	char		*host;
	int		 d, slot;

	/* Past the word and the slot number. */
	if ((addr = strchr(text, ' ')) == NULL ||
	    (addr = strchr(addr + 1, ' ')) == NULL ||
	    (colon = strrchr(++addr, ':')) == NULL || colon == addr) {
		err_set(e, ERR_PROTOCOL, "bad redirection: %s", text);
		return -1;
	}
	host = xstrndup(addr, (size_t)(colon - addr));
	slot = atoi(strchr(text, ' ') + 1);
	/* Kept for the words if the request runs out of time (timed_out). */
	r->redirects++;
	r->hop_slot = slot;
	snprintf(r->hop_from, sizeof r->hop_from, "%s",
	    strstr(r->url->display, "://") != NULL ?
	    strstr(r->url->display, "://") + 3 : r->url->display);
	snprintf(r->hop_to, sizeof r->hop_to, "%s", addr);
	log_verbose(strncmp(text, "ASK ", 4) == 0 ?
	    "%s: slot %d is moving to %s: asked there (redirection %d of the "
	    "request)" : "%s: slot %d is served by %s: sent there "
	    "(redirection %d of the request)", r->url->display, slot, addr,
	    r->redirects);
	doors_init(r);
	d = r->ndoors > 0 ? door_of(r, host, atoi(colon + 1), -1) : -1;
	if (d >= 0 && r->pending && (r->tried & (1ULL << d))) {
		/*
		 * A node this request could not reach: the cluster has not
		 * seen it fail yet.  Another door may know better (fail()
		 * moves on), or the failover is still to come.
		 */
		err_set(e, ERR_UNAVAILABLE, "the cluster names %s for slot "
		    "%d, which cannot be reached (a failover may be under way; "
		    "%s)", r->doors[d]->display, slot, r->opts->offer_wait ?
		    "give -w to wait through it" : "try again once a replica "
		    "has taken over");
		free(host);
		return -1;
	}
	/* A door: MOVED says who serves the slot from now on. */
	if (d >= 0 && strncmp(text, "MOVED ", 6) == 0 && slot >= 0 &&
	    slot < CLUSTER_SLOTS)
		r->slots[slot] = (short)d;
	url_retarget(&to, r->orig->scheme == URL_SENTINEL ? r->url : r->orig,
	    host, atoi(colon + 1));
	free(host);
	/* Cluster has only db 0: a SELECT there would fail. */
	to.db = -1;
	r->ask = strncmp(text, "ASK ", 4) == 0;
	r->waited = 1;		/* the BLPOP is not made again */
	drop_connection(r);
	url_free(&r->target);
	r->target = to;
	r->url = &r->target;
	r->door = -1;
	if (d >= 0) {
		url_free(&r->target);
		r->url = r->doors[d];
		r->door = d;
	}
	r->check_role = 0;
	r->connect_deadline = within_request(r, r->opts->connect_timeout_ms);
	return open_transport(r, e);
}

/*
 * Send the request again after a pause that doubles up to TRYAGAIN_MAX_MS,
 * to the same node (after ASKING if ask), by the same deadline: 1, or 0
 * when the deadline comes first.
 *
 * Nodes sending it back and forth (loop) answer at once, so it is the
 * request's own deadline that bounds them, not a reply's: the
 * redirections start counting again (a move may end meanwhile), and when
 * the pause does not fit, the request waits out its deadline, whose
 * words (timed_out) say what happened.
 */
static int
resend_later(struct redis *r, int ask, int loop)
{
	char	d[32];

	if (loop)
		r->deadline = r->req_deadline;
	if (now_mono_ms() + r->retry_pause >= r->deadline) {
		if (!loop)
			return 0;
		r->retry_at = r->deadline + 1;	/* never: timed_out first */
		return 1;
	}
	if (loop)
		log_verbose("%s: sent back and forth %d times; again in %s",
		    r->url->display, r->redirects, duration_format(
		    r->retry_pause, d, sizeof d));
	r->retry_at = now_mono_ms() + r->retry_pause;
	if ((r->retry_pause *= 2) > TRYAGAIN_MAX_MS)
		r->retry_pause = TRYAGAIN_MAX_MS;
	r->ask = ask;
	r->waited = 1;	/* its BLPOP, if any, is done */
	r->hops = 0;
	return 1;
}

/*
 * The request's own reply: 1 done, 0 it went out again (EVAL after
 * NOSCRIPT, or to another node), -1 failed.
 */
static int
main_reply(struct redis *r, struct redis_reply *rr, struct err *e)
{
	if (rr->type == REDIS_T_ERROR) {
		/*
		 * The script cache is empty after a restart, a failover or
		 * SCRIPT FLUSH: send the body once, which also loads it.
		 * A new request, with a round trip of its own.
		 */
		if (r->req->script != NULL &&
		    strncmp(rr->str, "NOSCRIPT", 8) == 0) {
			const char	*asking[1] = { "ASKING" };

			redis_reply_free(rr);
			r->deadline = within_request(r, r->opts->timeout_ms);
			/*
			 * On an ASK target (a node importing the slot, which
			 * may never have run rlock), the EVAL needs its
			 * ASKING too, or it is sent back with MOVED.
			 */
			if (r->asked && queue(r, DUE_ASKING, 1, asking, NULL,
			    e) == -1)
				return -1;
			return queue_script(r, 0, e) == -1 ? -1 : 0;
		}
		/*
		 * The slot is migrating and the keys are partly moved:
		 * nothing ran (or a script met a key that is not here, see
		 * moving_in_script).  Send it
		 * again after a short pause, to the same node (with ASKING
		 * again if it went with it), within the same deadline; the
		 * last refusal is the reply if the move outlasts it.
		 */
		if ((strncmp(rr->str, "TRYAGAIN", 8) == 0 ||
		    moving_in_script(rr->str)) && resend_later(r, r->asked, 0)) {
			redis_reply_free(rr);
			return 0;
		}
		if ((strncmp(rr->str, "MOVED ", 6) == 0 ||
		    strncmp(rr->str, "ASK ", 4) == 0) &&
		    r->hops++ < MAX_REDIRECTS) {
			int rc = redirect(r, rr->str, e);

			redis_reply_free(rr);
			return rc == -1 ? -1 : 0;
		}
		/*
		 * Nodes sending it back and forth: the end of a move whose
		 * last CLUSTER SETSLOT has not reached every node yet, or a
		 * failover being learnt.  Paused and sent again like a
		 * TRYAGAIN, within the same deadline.
		 */
		if ((strncmp(rr->str, "MOVED ", 6) == 0 ||
		    strncmp(rr->str, "ASK ", 4) == 0) && resend_later(r, 0, 1)) {
			redis_reply_free(rr);
			return 0;
		}
	}
	/* The node answered for the slot: requests for it start there. */
	if (r->door >= 0 && !r->asked && (rr->type != REDIS_T_ERROR ||
	    !passing_words(r, rr->str, NULL, 0))) {
		if (r->slot >= 0)
			r->slots[r->slot] = (short)r->door;
		r->home = r->door;
	}
	r->reply = rr;
	r->pending = 0;
	r->wrote_gen = r->conn_gen;
	return 1;
}

/* Whether replies to the handshake are still due. */
static int
handshaking(const struct redis *r)
{
	return r->ndue > 0 && r->due[0] <= DUE_ROLE;
}

/* Read what has come: 1 the request is done, 0 pending, -1 failed. */
static int
step_ready(struct redis *r, struct err *e)
{
	struct redis_reply	*rr;
	enum due		 d;
	int			 rc;

	if (flush(r, e) == -1)
		return fail(r, e, 0);
	while (r->state == READY && r->ndue > 0) {
		if ((rc = next_reply(r, &rr, e)) == -1)
			return fail(r, e, handshaking(r));
		if (rc == 0)
			return 0;
		d = r->due[0];
		memmove(r->due, r->due + 1, --r->ndue * sizeof *r->due);
		if (d == DUE_MAIN) {
			if ((rc = main_reply(r, rr, e)) == -1)
				return fail(r, e, 0);
			if (rc == 1)
				return 1;
			if (r->state != READY)
				return step(r, e);	/* redirected */
			if (flush(r, e) == -1)
				return fail(r, e, 0);
			continue;
		}
		if (d == DUE_BLPOP) {
			/*
			 * Popped or timed out, the script ran right after it:
			 * its reply is the one that counts, a round trip from
			 * now.  An error reply did not wait at all: it is kept
			 * for the caller (redis_wait_error), who must not send
			 * the next one at once.  A redirection is the script's
			 * business.
			 */
			r->deadline = within_request(r, r->opts->timeout_ms);
			if (rr->type == REDIS_T_ERROR)
				note_wait_error(r, rr);
			r->popped = rr->type == REDIS_T_ARRAY;
		} else if (handshake_reply(r, d, rr, e) == -1) {
			redis_reply_free(rr);
			/* Our credentials or db are wrong: no message prefix. */
			r->connect_failed = 1;
			redis_abandon(r);
			return -1;
		}
		redis_reply_free(rr);
		if (r->holding && !authenticating(r) &&
		    (queue_body(r, e) == -1 || flush(r, e) == -1))
			return fail(r, e, 0);
	}
	return 0;
}

int64_t
redis_deadline(const struct redis *r)
{
	switch (r->state) {
	case IDLE:
		break;
	case RESOLVING:
	case CONNECTING:
		return r->connect_deadline;
	case READY:
		if (handshaking(r) && r->connect_deadline < r->deadline)
			return r->connect_deadline;
		return r->deadline;
	}
	return -1;
}

/*
 * The request's own deadline has passed after redirections: the nodes
 * kept sending it on (a loop, or a move that outlasted it).  One line that
 * says so, the last hop, and the likely cause.
 */
static int
redirected_out(struct redis *r, struct err *e)
{
	char	d[32];

	err_set(e, ERR_TIMEOUT, "the request did not end within %s "
	    "(--connect-timeout + --timeout): the cluster redirected it %d "
	    "time%s, last from %s to %s (a redirect loop: is slot %d MIGRATING "
	    "toward a node that is not IMPORTING it?)", duration_format(
	    r->req_budget, d, sizeof d), r->redirects,
	    r->redirects == 1 ? "" : "s", r->hop_from, r->hop_to, r->hop_slot);
	r->url = r->orig;	/* the message names its nodes itself */
	return fail(r, e, 0);
}

/* The deadline has passed: say what did not come in time. */
static int
timed_out(struct redis *r, struct err *e)
{
	char	d[32];

	if (r->pending && r->redirects > 0 && now_mono_ms() >= r->req_deadline)
		return redirected_out(r, e);
	if (r->pending && r->tried != 0 && now_mono_ms() >= r->req_deadline) {
		/* Other doors tried first: this one had only what was left. */
		err_set(e, ERR_TIMEOUT, "no answer before the request's "
		    "deadline, %s after its start (--connect-timeout + "
		    "--timeout)", duration_format(r->req_budget, d, sizeof d));
		return fail(r, e, r->state != READY || handshaking(r));
	}
	switch (r->state) {
	case RESOLVING:
		err_set(e, ERR_TIMEOUT, "no sentinel answered within %s "
		    "(--connect-timeout)", duration_format(
		    r->opts->connect_timeout_ms, d, sizeof d));
		return fail(r, e, 1);
	case CONNECTING:
		transport_timed_out(r->t, r->opts->connect_timeout_ms, e);
		return fail(r, e, 1);
	default:
		break;
	}
	if (handshaking(r) && r->connect_deadline <= r->deadline) {
		err_set(e, ERR_TIMEOUT, "no answer within %s "
		    "(--connect-timeout)", duration_format(
		    r->opts->connect_timeout_ms, d, sizeof d));
		return fail(r, e, 1);
	}
	err_set(e, ERR_TIMEOUT, "no reply within %s (--timeout)",
	    duration_format(r->opts->timeout_ms, d, sizeof d));
	return fail(r, e, 0);
}

static int
step(struct redis *r, struct err *e)
{
	int	rc;

	switch (r->state) {
	case IDLE:
		err_set(e, ERR_SOFTWARE, "no connection");
		return -1;
	case RESOLVING:
		if ((rc = step_sentinel(r, e)) == -1) {
			if (e->kind != ERR_INTERRUPTED)
				err_prefix(e, "%s", r->orig->display);
			r->connect_failed = 1;
			redis_abandon(r);
			return -1;
		}
		if (rc == 0)
			break;
		/* FALLTHROUGH */
	case CONNECTING:
		if ((rc = transport_step(r->t, e)) == -1)
			return fail(r, e, 1);
		if (rc == 0)
			break;
		r->state = READY;
		if (!r->pending)
			return 0;
		if (queue_request(r, e) == -1)
			return fail(r, e, 0);
		/* FALLTHROUGH */
	case READY:
		if (!r->pending)
			return 0;
		if (r->retry_at > 0 && now_mono_ms() >= r->retry_at &&
		    r->ndue == 0) {
			/* After TRYAGAIN: again, by the same deadline. */
			int64_t	deadline = r->deadline;

			r->retry_at = 0;
			if (queue_body(r, e) == -1)
				return fail(r, e, 0);
			r->deadline = deadline;
		}
		if ((rc = step_ready(r, e)) != 0)
			return rc;
		break;
	}
	if (now_mono_ms() >= redis_deadline(r))
		return timed_out(r, e);
	return 0;
}

int
redis_step(struct redis *r, struct err *e)
{
	if (!r->pending) {
		err_set(e, ERR_SOFTWARE, "no request in flight");
		return -1;
	}
	return step(r, e);
}

/* The error code (its first word) of a BLPOP's error reply. */
static void
note_wait_error(struct redis *r, const struct redis_reply *rr)
{
	size_t	n = rr->str != NULL ? strcspn(rr->str, " \r\n") : 0;

	if ((n == 5 && strncmp(rr->str, "MOVED", 5) == 0) ||
	    (n == 3 && strncmp(rr->str, "ASK", 3) == 0))
		return;
	if (n == 0 || n >= sizeof r->wait_err)
		snprintf(r->wait_err, sizeof r->wait_err, "ERR");
	else {
		memcpy(r->wait_err, rr->str, n);
		r->wait_err[n] = '\0';
	}
}

const char *
redis_wait_error(const struct redis *r)
{
	return r->wait_err[0] != '\0' ? r->wait_err : NULL;
}

int
redis_wait_popped(const struct redis *r)
{
	return r->popped;
}

int
redis_wait_unanswered(const struct redis *r)
{
	int	i;

	if (r->state != READY || !r->pending || r->outoff < r->outlen)
		return 0;
	for (i = 0; i < r->ndue; i++)
		if (r->due[i] == DUE_BLPOP || r->due[i] == DUE_MAIN)
			return 1;
	return 0;
}

/*
 * Whether the request is about the writes of its own connection: WAIT
 * counts the replicas that have every write made on the connection it is
 * sent on.  Sent on another (a reconnection, another door), it has
 * nothing to wait for and "confirms" at once; so it goes on the
 * connection of the request before it, or fails.
 */
static int
own_writes(const struct redis_req *q)
{
	return q->script == NULL && q->argc > 0 &&
	    strcasecmp(q->argv[0], "WAIT") == 0;
}

/* The slot of the key a request names (a script's first, a BLPOP's); -1. */
static int
request_slot(const struct redis_req *q)
{
	if (q->script != NULL && q->nkeys > 0)
		return redis_key_slot(q->keys[0]);
	if (q->wait_key != NULL)
		return redis_key_slot(q->wait_key);
	return -1;
}

int
redis_start(struct redis *r, const struct redis_req *req, struct err *e)
{
	r->wait_err[0] = '\0';
	r->popped = 0;
	if (r->pending) {
		err_set(e, ERR_SOFTWARE, "request already in flight");
		return -1;
	}
	/* A connection the server (or a proxy) closed while it sat idle. */
	if (r->state == READY && !transport_idle_ok(r->t))
		disconnect(r);
	if (own_writes(req) && (r->state != READY ||
	    r->wrote_gen != r->conn_gen)) {
		err_set(e, ERR_UNAVAILABLE, "%s: the connection closed after "
		    "the write, so WAIT cannot confirm that replicas have it",
		    r->url->display);
		return -1;
	}
	r->req = req;
	r->pending = 1;
	r->connect_failed = 0;	/* says how this request failed, if it does */
	r->hops = 0;
	r->redirects = 0;
	r->ask = 0;
	r->waited = 0;
	r->retry_at = 0;
	r->retry_pause = TRYAGAIN_FIRST_MS;
	redis_reply_free(r->reply);
	r->reply = NULL;
	/*
	 * A Cluster (doors known, or learnt during this request): the
	 * request starts at the node that serves its key's slot, and may
	 * try other doors until req_deadline.  Nothing is sent for it.
	 */
	r->tried = 0;
	r->slot = request_slot(req);
	r->req_budget = r->opts->connect_timeout_ms + r->opts->timeout_ms +
	    req->extra_ms + (req->wait_key != NULL ? req->wait_ms : 0);
	r->req_deadline = now_mono_ms() + r->req_budget;
	if (r->ndoors > 0 && r->state != IDLE && r->slot >= 0 &&
	    r->slots[r->slot] >= 0 && r->slots[r->slot] != r->door)
		disconnect(r);
	if (redis_prepare(r, e) == -1)
		return -1;
	if (r->state == READY && queue_request(r, e) == -1)
		return fail(r, e, 0);
	return 0;
}

struct redis_reply *
redis_take(struct redis *r)
{
	struct redis_reply	*rr = r->reply;

	r->reply = NULL;
	return rr;
}

int
redis_pollfds(const struct redis *r, struct pollfd *pfd)
{
	switch (r->state) {
	case IDLE:
		break;
	case RESOLVING:
		return r->sub != NULL ? redis_pollfds(r->sub, pfd) : 0;
	case CONNECTING:
		return transport_pollfds(r->t, POLLOUT, pfd);
	case READY:
		return transport_pollfds(r->t, r->outoff < r->outlen ?
		    POLLIN | POLLOUT : POLLIN, pfd);
	}
	return 0;
}

int64_t
redis_wake(const struct redis *r)
{
	int64_t	w;

	switch (r->state) {
	case RESOLVING:
		if (r->sub == NULL)
			return now_mono_ms();
		w = redis_wake(r->sub);
		if (w < 0 || redis_deadline(r->sub) < w)
			w = redis_deadline(r->sub);
		return w;
	case CONNECTING:
		return transport_wake(r->t);
	case READY:
		return r->retry_at > 0 ? r->retry_at : -1;
	default:
		return -1;
	}
}

void
redis_free(struct redis *r)
{
	if (r == NULL)
		return;
	disconnect(r);
	if (r->reader != NULL)
		redisReaderFree(r->reader);
	redis_reply_free(r->reply);
	url_free(&r->target);
	while (r->ndoors > 0) {
		url_free(r->doors[--r->ndoors]);
		free(r->doors[r->ndoors]);
	}
	free(r->doors);
	free(r->slots);
	free(r);
}
