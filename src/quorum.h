/* quorum.h: the set of Redis servers a lock lives on. */
#ifndef RLOCK_QUORUM_H
#define RLOCK_QUORUM_H

#include <stdint.h>

#include "err.h"
#include "netopts.h"
#include "redis.h"
#include "url.h"

/*
 * One server is a quorum of one: every lock operation goes through here,
 * so that several independent masters (Redlock) only widen n.  A request
 * is sent to every server before any reply is read, and one poll() loop
 * moves every connection on at once, each until its own deadline, so a
 * round trip to n servers costs the slowest one, not the sum.
 */
struct quorum {
	int			 n;
	const struct url	*urls;	/* n of them, owned by the caller */
	const struct redis_opts	*opts;
	struct redis		**conn;	/* one per server */
	struct err		*errs;	/* last failure per server */
	struct err		*cerrs;	/* last failure to connect */
	int64_t			*retry_at; /* no new connect before */
	/*
	 * The last round gave up server i with its request sent and not
	 * answered (its BLPOP blocked, or its script was under way): the
	 * script may have run.  Not a failure: busy, as far as the caller
	 * can tell.
	 */
	int			*blocked;
	int64_t			 limit;	/* no wait past it; 0: none */
	/* The last wait's BLPOP answered an error: on server wait_err - 1. */
	int			 wait_err;
	char			 wait_code[32];	/* its code: "WRONGTYPE", ... */
	/* Called once, when the first wait's requests are out. */
	void			(*waiting)(void *);
	void			*waiting_arg;
};

/* The number of servers that must agree. */
#define quorum_majority(q)	((q)->n / 2 + 1)

/* Set q up for urls, unconnected: each connects when first used. */
void	quorum_init(struct quorum *, const struct url *urls, int n,
	    const struct redis_opts *);
/*
 * The same, and start connecting to every server (the connects go on in
 * the first request).  Fails (-1, e filled) only when fewer than a
 * majority could even be started.
 */
int	quorum_open(struct quorum *, const struct url *urls, int n,
	    const struct redis_opts *, struct err *e);
void	quorum_close(struct quorum *);
/*
 * No request waits past until (CLOCK_MONOTONIC ms; 0: no bound): the
 * heartbeat's extends never outlast the lock's validity.
 */
void	quorum_limit(struct quorum *, int64_t until);
/*
 * fn(arg), once, as soon as the requests of the next round that waits
 * (BLPOP for a wake) have gone out: what a caller readies while it waits
 * (exec's guard, supervise_spawn_guard); fn NULL: nothing.
 */
void	quorum_waiting(struct quorum *, void (*fn)(void *), void *arg);

/* A Cluster master, and the hash slots it serves (lo..hi, inclusive). */
struct quorum_master {
	struct url	  url;
	int		  nranges;
	int		(*ranges)[2];
};

/*
 * The masters server i's CLUSTER NODES lists (addresses as it sees them,
 * with the URL's credentials and TLS): how many (*m to free with
 * quorum_masters_free), 0 when i is no Cluster node, -1 (e filled).
 */
int	quorum_cluster_masters(struct quorum *, int i, struct quorum_master **m,
	    struct err *e);
void	quorum_masters_free(struct quorum_master *, int n);
/* The hash slot of a key, as Redis Cluster computes it. */
int	quorum_key_slot(const char *key);
/*
 * Redis Cluster: script s on every master of server 0 at once, keys of
 * several slots allowed (allow-cross-slot-keys: Redis 7).  A call's
 * declared keys must share a slot, so none are declared: the keys go as
 * arguments after args, and the script, given a prelude that puts them
 * back in KEYS, must leave alone (pcall) those another master serves.
 * Returns the number of masters, each one's reply in (*replies)[i] (free
 * with quorum_cluster_free), or -1 (e filled: not a Cluster, a master that
 * did not answer, Redis 6).
 */
struct quorum_req;
int	quorum_cluster_run(struct quorum *, const struct quorum_req *,
	    struct redis_reply ***replies, struct err *e);
void	quorum_cluster_free(struct redis_reply **, int n);

/*
 * Whether the replies so far decide the outcome (done[i]: server i has
 * answered or failed): lets a quorum stop waiting for the slow ones.
 * Non-zero: decided (the others get a short grace); 2: stop at once.
 */
typedef int (*quorum_settled_fn)(struct redis_reply **replies, const int *done,
    int n, void *arg);

/*
 * One script call, whatever it waits for: the script, its keys and
 * arguments; sent to every server, or only to those with only[i] set
 * (only may be NULL); done as soon as settled(replies, done, n, arg) says
 * so (settled may be NULL: every server's answer); and, with wait_key,
 * each server's script sent behind a BLPOP of wait_key (and wait_key2, if
 * not NULL) for at most wait_ms (see struct redis_req): a waiter woken by
 * a release tries the lock with no round trip of its own.  With several
 * servers, a server woken holds the others a short grace (see quorum.c);
 * those still blocked after it are given up.
 */
struct quorum_req {
	struct script		 *script;
	int			  nkeys, nargs;
	const char		**keys, **args;
	const int		 *only;
	quorum_settled_fn	  settled;
	void			 *arg;
	const char		 *wait_key, *wait_key2;
	int64_t			  wait_ms;
};
/*
 * Run it: replies[i] is server i's reply, or NULL where it failed or was
 * not asked (errs[i] says why; error replies count as failures).  Returns
 * how many servers replied; when fewer than a majority of those asked, e
 * holds the first failure.
 */
int	quorum_run(struct quorum *, const struct quorum_req *,
	    struct redis_reply **replies, struct err *e);
/* The same for a plain command; extra_ms for commands that block (WAIT). */
int	quorum_command(struct quorum *, const int *only, int argc,
	    const char **argv, int64_t extra_ms, struct redis_reply **replies,
	    struct err *e);
/*
 * One command to server i alone: its reply, or NULL with e filled (an
 * error reply too, as ERR_REPLY).  quorum_callv: NUL-terminated words,
 * then NULL.
 */
struct redis_reply *quorum_call(struct quorum *, int i, struct err *e,
	    int argc, const char **argv);
struct redis_reply *quorum_callv(struct quorum *, int i, struct err *e, ...);
/* The same, with an error reply returned as a reply (e filled too). */
struct redis_reply *quorum_ask(struct quorum *, int i, struct err *e,
	    int argc, const char **argv);

/*
 * After a quorum_run with a wait_key: the server whose BLPOP got an
 * error reply instead of waiting, with *code (if code is not NULL) its
 * error code; -1 if none.
 */
int	quorum_wait_error(const struct quorum *, const char **code);

/*
 * Every key matching pattern (a SCAN MATCH glob) on every server, each
 * given to fn (a key may come more than once); a Cluster node's listing
 * covers every master it knows of.  Returns how many servers were listed
 * in full (errs[i] says why the others were not).
 */
typedef void (*quorum_key_fn)(void *arg, const char *key, size_t len);
int	quorum_scan(struct quorum *, const char *pattern, quorum_key_fn fn,
	    void *arg);

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

/* Whether any request ever went out to server i (see redis_reached). */
int	quorum_reached(const struct quorum *, int i);

void	quorum_free_replies(struct quorum *, struct redis_reply **);

/*
 * A reply's shape: whether it is what the request's script or command
 * answers (arg is the caller's).
 */
typedef int (*quorum_shape_fn)(const struct redis_reply *, void *arg);

/*
 * Drop the replies (error replies aside) that shape refuses: each such
 * server counts as one that did not answer, its error naming it.  Returns
 * ok, the number of answers, less those dropped; when that is under a
 * majority and some were dropped, e says why.  what names the request.
 */
int	quorum_check(struct quorum *, struct redis_reply **, quorum_shape_fn,
	    void *arg, const char *what, int ok, struct err *e);

/* A reply's type as words for messages: "an array", "a status"... */
const char	*quorum_reply_kind(const struct redis_reply *);

#endif
