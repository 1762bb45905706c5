/* quorum.h: the set of Redis servers a lock lives on. */
#ifndef RLOCK_QUORUM_H
#define RLOCK_QUORUM_H

#include <stdint.h>

#include "err.h"
#include "redis.h"
#include "url.h"

/*
 * One server is a quorum of one: every lock operation goes through here,
 * so that several independent masters (Redlock) only widen n.  A request
 * is sent to every server before any reply is read, and each connection's
 * reply deadline is fixed when it was sent, so a round trip to n servers
 * costs the slowest one (at most --timeout), not the sum.
 */
struct quorum {
	int			 n;
	const struct url	*urls;	/* n of them, owned by the caller */
	const struct redis_opts	*opts;
	struct redis		**conn;	/* NULL where not connected */
	struct err		*errs;	/* last failure per server */
	struct err		*cerrs;	/* last failure to connect */
	int64_t			*retry_at; /* no new connect before */
};

/* The number of servers that must agree. */
#define quorum_majority(q)	((q)->n / 2 + 1)

/* Set q up for urls, unconnected: each connects when first used. */
void	quorum_init(struct quorum *, const struct url *urls, int n,
	    const struct redis_opts *);
/*
 * Connect to every server, in parallel when there are several.  Fails
 * (-1, e filled with the first failure) unless a majority answered.
 */
int	quorum_open(struct quorum *, const struct url *urls, int n,
	    const struct redis_opts *, struct err *e);
void	quorum_close(struct quorum *);

/*
 * Run a script on every server, or only on those with only[i] set (only
 * may be NULL).  replies[i] is server i's reply, or NULL where it failed
 * or was not asked (errs[i] says why; error replies count as failures).
 * Broken connections are reconnected first.  Returns how many servers
 * replied; when fewer than a majority of those asked, e holds the first
 * failure.
 */
int	quorum_script(struct quorum *, const int *only, struct script *,
	    int nkeys, const char **keys, int nargs, const char **args,
	    struct redis_reply **replies, struct err *e);
/*
 * Whether the replies so far decide the outcome (done[i]: server i has
 * answered or failed): lets a quorum stop waiting for the slow ones.
 */
typedef int (*quorum_settled_fn)(struct redis_reply **replies, const int *done,
    int n, void *arg);

/* quorum_script, returning as soon as settled() says so. */
int	quorum_script_until(struct quorum *, const int *only,
	    quorum_settled_fn settled, void *arg, struct script *,
	    int nkeys, const char **keys, int nargs, const char **args,
	    struct redis_reply **replies, struct err *e);
/*
 * quorum_script_until, each server's script sent together with a BLPOP of
 * key for at most wait_ms before it (redis_send_wait_script): for one
 * server, a waiter woken by a release tries the lock with no round trip
 * of its own.
 */
int	quorum_wait_script(struct quorum *, const char *key, int64_t wait_ms,
	    quorum_settled_fn settled, void *arg, struct script *,
	    int nkeys, const char **keys, int nargs, const char **args,
	    struct redis_reply **replies, struct err *e);
/* The same for a plain command; extra_ms for commands that block (WAIT). */
int	quorum_command(struct quorum *, const int *only, int argc,
	    const char **argv, int64_t extra_ms, struct redis_reply **replies,
	    struct err *e);

/*
 * Block for at most timeout_ms until key (a list) has an element on any
 * server, and pop it.  Returns 1 when woken by an element, 0 on timeout,
 * -1 when no server could be asked.
 */
int	quorum_wait(struct quorum *, const char *key, int64_t timeout_ms,
	    struct err *e);

/*
 * -1 (e filled, ERR_USAGE) if two connected servers are one and the same,
 * reached under two names (their run_ids, learnt on connecting, match).
 */
int	quorum_distinct(struct quorum *, struct err *e);

/*
 * Forget the pause after a failed connect (RECONNECT_PAUSE_MS): the next
 * request tries every server (a release must reach all it can).
 */
void	quorum_retry_now(struct quorum *);

/* Server i's connection, reconnected if need be; NULL with e filled. */
struct redis *quorum_conn(struct quorum *, int i, struct err *e);

void	quorum_free_replies(struct quorum *, struct redis_reply **);

#endif
