/*
 * redis-private.h: what redis.c, redis-reply.c, cluster.c and sentinel.c
 * share about one server: struct redis and the steps they take in turn.
 * Nothing outside those four includes it (see redis.h for the rest).
 */
#ifndef RLOCK_REDIS_PRIVATE_H
#define RLOCK_REDIS_PRIVATE_H

#include <hiredis/hiredis.h>

#include <stdint.h>

#include "redis.h"
#include "transport.h"

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

/* How often one request may be redirected (MOVED/ASK) before giving up. */
#define MAX_REDIRECTS	5
/* The pauses before sending a request again after TRYAGAIN (ms). */
#define TRYAGAIN_FIRST_MS	10
#define TRYAGAIN_MAX_MS		200

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

	/* The Sentinel lookup (sentinel.c); NULL until the first. */
	struct sentinels	*sentinels;

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

/* redis.c: the connection. */
int64_t	redis_within(const struct redis *, int64_t ms);
void	redis_drop_connection(struct redis *);
int	redis_open_transport(struct redis *, struct err *);
int	redis_own_writes(const struct redis_req *);
int	redis_fail(struct redis *, struct err *, int connecting);

/* redis-reply.c: what a reply may be, and what it says in words. */
int	redis_bound_scan(struct bound *, const char *p, size_t n,
	    struct err *);
struct redis_reply *redis_convert(const redisReply *);
int	redis_too_old(struct redis *, const struct redis_reply *,
	    struct err *);
int	redis_moving_in_script(const char *text);
int	redis_passing_words(const struct redis *, const char *text,
	    char *out, size_t len);

/* cluster.c: the doors of a Cluster and its redirections. */
void	cluster_doors_init(struct redis *);
int	cluster_next_door(struct redis *, struct err *);
int	cluster_enter_any_door(struct redis *, struct err *);
int	cluster_redirect(struct redis *, const char *text, struct err *);
int	cluster_resend_later(struct redis *, int ask, int loop);
int	cluster_redirected_out(struct redis *, struct err *);
int	cluster_request_slot(const struct redis_req *);

/*
 * sentinel.c: where the sentinels say the master is.  sentinel_begin
 * starts a lookup (r RESOLVING) within r->connect_deadline; sentinel_step
 * goes on with it: 1 the transport to the master is under way, 0
 * pending, -1 none could say (e: each sentinel and what it did).  When
 * the master named is no good (not a master, cannot be reached),
 * sentinel_refused goes on with the next sentinel: 0, or -1 with e as
 * sentinel_summary, which also ends a lookup out of time.
 */
void	sentinel_begin(struct redis *);
int	sentinel_step(struct redis *, struct err *);
int	sentinel_refused(struct redis *, struct err *);
void	sentinel_summary(struct redis *, struct err *);
int	sentinel_pollfds(const struct redis *, struct pollfd *);
int64_t	sentinel_wake(const struct redis *);
void	sentinel_stop(struct redis *);
void	sentinel_free(struct redis *);

#endif
