/* lock.h: the lock algorithm: acquire, wait, release, extend, inspect. */
#ifndef RLOCK_LOCK_H
#define RLOCK_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "contract.h"
#include "err.h"
#include "quorum.h"

#define TOKEN_MAX	255

/*
 * The TTL when none is given: acquire's default, and extend's when the
 * lock does not record what it was acquired with.
 */
#define LOCK_DEFAULT_TTL_MS	30000

/* Who holds a lock, stored with it. */
struct lock_meta {
	const char	*host;
	long long	 pid;
	const char	*user;
	const char	*command;	/* exec's command line, or "" */
};

/* Who holds a busy lock, as the last failed attempt saw it. */
struct lock_holder {
	char		 host[128];
	char		 command[128];
	long long	 pid;
	long long	 held_ms;	/* at seen_at; -1 unknown */
	long long	 pttl_ms;	/* at seen_at; -1 no expiry */
	int64_t		 seen_at;	/* CLOCK_MONOTONIC ms */
};

struct lock;

/*
 * Called while acquire waits: who holds it, how long we have waited and
 * how much of --wait is left (-1: no limit).  With a callback set, the
 * wait wakes every second to call it again.
 */
typedef void (*lock_wait_fn)(const struct lock *, const struct lock_holder *,
    int64_t waited_ms, int64_t left_ms);

struct lock;
const char	**lock_keys(const struct lock *);

struct lock {
	struct quorum	*q;
	const char	*name;
	/*
	 * The lock's keys (rlock-protocol(7)), as every script takes them:
	 * keys[] in the contract's order (src/lua/contract), or by name
	 * (lock_init checks that the two agree).
	 */
	union {
		char	*keys[KEY__COUNT];
		struct {
			char	*key;		/* PREFIX{NAME}: the holders */
			char	*fence_key;	/* :fence: the counter */
			char	*wake_key;	/* :wake: release wakes waiters */
			char	*waiters_key;	/* :waiters: who waits */
			char	*queue_key;	/* :queue: --fifo's order */
			char	*log_key;	/* :log: the history */
			char	*every_key;	/* :every: --every's schedule */
			char	*none_key;	/* :none: never written */
		};
	};
	char		*own_wake_key;	/* PREFIX{NAME}:wake:TOKEN */
	char		 token[TOKEN_MAX + 1];

	int64_t		 ttl_ms;	/* as acquired or last extended */
	long long	 fence;
	/*
	 * CLOCK_MONOTONIC ms until which the lock is surely ours: the time
	 * taken before the last confirmed acquire/extend was sent, plus the
	 * TTL, minus the drift margin.  Atomic: exec's heartbeat extends its
	 * held lock in its thread, and this field is the one deadline the
	 * supervisor reads meanwhile (heartbeat_state), not a copy of it.
	 */
	_Atomic int64_t	 valid_until;
	int64_t		 acquired_at;	/* monotonic, before it was asked for */
	int64_t		 taken_at;	/* monotonic, when the grant came */
	/* An acquire was sent but its outcome is unknown: release to be safe. */
	int		 maybe_held;
	/*
	 * The acquire run's id, the same for each of its attempts: each hold
	 * records the run that took it, and a give-back ends only those
	 * (see release.lua).
	 */
	char		 run[40];
	/*
	 * The servers that granted or last extended the lock (bit i: server
	 * i), known once this process has acquired it: a server outside it
	 * that answers "not the holder" says nothing of a loss.
	 */
	unsigned	 won;
	int		 won_known;
	int		 tried;		/* this process sent an acquire */
	int		 listed;	/* maybe among the waiters */
	int		 fifo;		/* --fifo: wait in line */
	int		 limit;		/* --limit: holders at once; 0 or 1: one */
	int		 shared;	/* --shared: one of many readers */
	/*
	 * exec --every: at most one start a period (0: none; -1: unknown,
	 * rlock release), only a success counting with --retry-failed;
	 * refused, when and where the period's run started (server-clock ms,
	 * and its age by that clock).
	 */
	int64_t		 every_ms;
	int		 retry_failed;
	/*
	 * --every: the server's clock (ms) at this run's first attempt, the
	 * slot it fired in, sent with its later ones (0: not known yet).
	 */
	long long	 fired_ms;
	/*
	 * When this machine's cron fired it (monotonic ms, before --splay;
	 * 0: at its first attempt): a firing belongs to its slot however
	 * long the splay slept.
	 */
	int64_t		 fired_mono;
	/*
	 * --cron: the expression's times around this machine's clock (ms,
	 * comma separated; "" without), the expression and its zone.
	 */
	char		 slots[128];
	const char	*cron, *cron_tz;
	/* Refused by a pause: until when (-1: until resumed), by whom. */
	long long	 paused_until_ms;
	char		 paused_by[128];
	int		 ended;		/* see lock_release_ended */
	int		 refused;
	long long	 started_ms, started_ago_ms;
	char		 started_host[128];
	long long	 started_pid;
	/*
	 * exec --pending N: at most N such waiters (0: not asked); a newer
	 * one superseded this run, which holds nothing and is listed
	 * nowhere: who it was.
	 */
	int		 pending;
	/*
	 * exec --replace: ask a plain holder to stop; --no-replace: this
	 * hold may not be asked.  Held: who asked it to stop (its last
	 * extend's word; "" none).
	 */
	int		 replace;
	int		 no_replace;
	char		 replace_host[128];
	char		 replace_pid[24];
	int		 superseded;
	char		 superseded_host[128];
	char		 superseded_pid[24];
	int64_t		 wait_ms;	/* the acquire's --wait */
	int64_t		 wait_start;	/* monotonic, when it began */
	int		 was_busy;	/* this run has been answered busy */
	int		 waited;	/* times lock_acquire slept */
	int		 late;		/* grants in a row that came too late */
	/*
	 * Blocking reads in a row that answered an error (a wake list that
	 * is not a list), and what is wrong, said once with -v and again if
	 * --wait ends so.
	 */
	int		 wait_errors;
	char		 wait_why[512];
	struct lock_holder holder;	/* when busy */
	lock_wait_fn	 on_wait;

	/* --wait-replicas: acks wanted after each write, and how long for. */
	int		 wait_replicas;
	int64_t		 wait_timeout_ms;

	/* The history (PREFIX{NAME}:log): events kept (0: none), and expiry. */
	int		 history_len;
	int64_t		 history_ttl_ms;
	/* Who we are, for the history: the holder's, once acquire has run. */
	struct lock_meta meta;
};

/* One server's view of a lock, in quorum mode. */
struct lock_node {
	const char	*url;		/* display form */
	int		 state;		/* NODE_* */
	char		*error;		/* NODE_UNREACHABLE: why */
};
#define NODE_FREE		0
#define NODE_HOLDS		1	/* the holder's token */
#define NODE_OTHER		2	/* another token (a partial acquire) */
#define NODE_UNREACHABLE	3

/* One waiter, as status shows it. */
struct lock_waiter {
	char		*token;		/* to tell them apart; never shown */
	char		*host;
	long long	 pid;
	char		*user;
	char		*command;
	long long	 waiting_ms;	/* so far, by the server's clock */
	long long	 place;		/* in the --fifo queue, from 1; 0: none */
};

/* One holder of a semaphore (--limit) or of a shared lock (--shared). */
struct lock_slot {
	char		*token;		/* to tell them apart; never shown */
	int		 votes;		/* servers that list it (quorum mode) */
	char		*host;
	long long	 pid;
	char		*user;
	char		*command;
	long long	 acquired_ms;
	long long	 ttl_ms;
	long long	 fence;
	long long	 pttl_ms;
};

/* What status shows about one lock. */
struct lock_status {
	char		*name;
	/*
	 * Not NULL: what is wrong with the lock's keys, in words (a listing
	 * shows the lock no further); after release --force, the damaged
	 * keys it removed, a line each.
	 */
	char		*damage;
	int		 held;
	long long	 pttl_ms;	/* -1: no expiry */
	long long	 last_fence;	/* the counter; 0 if never acquired */
	long long	 now_ms;	/* server's wall clock */
	char		*host;
	char		*user;
	char		*command;	/* NULL or "" when none */
	long long	 pid;
	long long	 acquired_ms;	/* server's wall clock, 0 if unknown */
	long long	 ttl_ms;
	long long	 fence;
	int		 nwaiters;
	struct lock_waiter *waiters;
	/*
	 * A semaphore (limit > 1) or a shared lock (shared): its holders,
	 * instead of the fields above.
	 */
	int		 shared;
	int		 limit;
	int		 nslots;
	struct lock_slot *slots;
	/* Quorum mode (nservers > 1): each server's view. */
	int		 nservers;
	int		 nholding;
	struct lock_node *nodes;
	/*
	 * A name run with exec --every (every_ms > 0): its period and its
	 * last start, the newest any server knows.
	 */
	long long	 every_ms;
	long long	 last_start_ms;	/* server's wall clock */
	char		*last_host;
	long long	 last_pid;
	char		*last_outcome;	/* "" while it runs: see lib.lua */
	/* Held: a newcomer's exec --replace asked it to stop (or NULL). */
	char		*replace_host;
	long long	 replace_pid;
	/*
	 * What rlock schedule set and the runs' record (0: none): the middle
	 * of the last started slot, the grace (0: half the period), when it
	 * was declared, the last success, failed runs in a row, a pause
	 * (until when, -1 until resumed; by whom, since when).
	 */
	long long	 slot_ms, grace_ms, declared_ms, last_success_ms;
	long long	 failures;
	long long	 paused_until_ms, paused_ms;
	char		*paused_by;
	char		*cron, *cron_tz;	/* --cron's; NULL or "": none */
};

/*
 * A damaged lock's error reply in words (malloc'ed); a listing reports
 * each damaged lock on stderr, a line each, and the command then exits 69
 * (lock_damage_count) after showing the others.
 */
char	*lock_damage_words(const char *reply);
void	 lock_damage_report(const char *words);
int	 lock_damage_count(void);
/*
 * Keep the reports instead (on), for doctor; off hands over those kept,
 * each once (malloc'ed, as the array), and how many.
 */
size_t	 lock_damage_keep(int on, char ***kept);

/* The drift margin for a TTL: 1% plus 2ms, as Redlock. */
int64_t	lock_drift(int64_t ttl_ms);

/* A fresh 128-bit random token, as text. */
void	lock_new_token(char *buf, size_t len);

/* Name the keys; token may be NULL (status, --force). */
void	lock_init(struct lock *, struct quorum *, const char *prefix,
	    const char *name, const char *token);
void	lock_free(struct lock *);

/*
 * Acquire, waiting at most wait_ms for a busy lock (-1: forever, 0: one
 * attempt).  While it waits it sleeps on the wake list, until a release
 * pushes to it or until the PTTL the last attempt saw runs out.  Returns
 * 1 when held, 0 when still busy at the end of the wait, -1 on error (and
 * then maybe_held says whether a release is owed).
 */
int	lock_acquire(struct lock *, int64_t ttl_ms, int64_t wait_ms,
	    const struct lock_meta *, struct err *);
/*
 * Take this acquire off the list of waiters (a waiter that gives up):
 * best effort, and only if it may be on it.  A waiter that gets the lock
 * is taken off by the acquire itself, and a release by the release.  A
 * lock handed to it after its last attempt is given back (to the next).
 */
void	lock_unlist(struct lock *);
/*
 * Give back what this acquire run took, and only that (a hold the token
 * had before the run stays), and take it off the waiters; best effort.
 * For a run that failed, was interrupted, or was not confirmed.
 */
void	lock_give_back(struct lock *);
/*
 * 1 released, 0 not the holder, -1 error.  outcome goes into the history:
 * exec's "exit:N", "signal:NAME" or "max-runtime", or "release"; NULL for
 * a give-back (nothing taken on purpose), which also records no loss.
 */
int	lock_release(struct lock *, const char *outcome, struct err *);
/*
 * Record in the history an event the client found itself: "lost" (by the
 * heartbeat), or "released" when exec leaves the lock to expire at
 * --min-hold; why, and the command's outcome.  Best effort: one round
 * trip, errors ignored.
 */
void	lock_note(struct lock *, const char *event, const char *why,
	    const char *outcome);
/* New TTL from now (0: the acquired TTL).  1 extended, 0 not the holder, -1 error. */
int	lock_extend(struct lock *, int64_t ttl_ms, struct err *);

/* 0 with st filled, -1 on error. */
int	lock_inspect(struct lock *, struct lock_status *st, struct err *);
/*
 * The same for n locks of prefix at once, a round trip for many of them
 * (one lock a round trip in Redis Cluster): 0 with st[0..n) filled (free
 * each), -1 with e filled and none to free.
 */
int	lock_inspect_many(struct quorum *, const char *prefix,
	    char *const *names, size_t n, struct lock_status *st,
	    struct err *);
/* Delete whoever holds it: 1 with st describing the holder, 0 if free, -1. */
int	lock_force_release(struct lock *, struct lock_status *st, struct err *);
/*
 * Names of the locks under prefix, sorted: of the keys PREFIX{NAME}SUFFIX
 * (suffix "": the locks held now; ":log": those with a history).  0 or -1.
 */
int	lock_list(struct quorum *, const char *prefix, const char *suffix,
	    char ***names, size_t *count, struct err *);
void	lock_status_free(struct lock_status *);

/*
 * How the scripts' replies are read (exposed for the tests and the
 * fuzzer): whether an acquire/extend reply grants the lock (raising
 * *fence to its fence), and the status an inspect/force reply describes.
 * Neither trusts the reply's shape.
 */
int	lock_reply_granted(const struct redis_reply *, long long *fence);
void	lock_reply_status(const struct redis_reply *, struct lock_status *);

/*
 * Settling a release whose outcome is unknown (see lock.c): whether the
 * token holds the lock now, read-only: 1 on a majority, 0 where fewer than
 * a majority still can, -1 (e filled) when the answers tell neither.
 */
int	lock_holds(struct lock *, struct err *);
/*
 * After lock_release returned -1 (its reply lost, or no answer in time):
 * ask until `until` (CLOCK_MONOTONIC ms; 0: twice --timeout from now)
 * whether the token still holds the lock, and release it again where it
 * does.  1 released by that new release; LOCK_SETTLED: the token no longer
 * holds it after a release that was sent -- released, unless the caller
 * knows that release went out after the lock's validity; -1 (e filled):
 * still unknown at `until`.
 */
#define LOCK_SETTLED	2
/*
 * The run's outcome, for a command that ended while the lock was surely
 * its own and whose hold is gone since (its key expired while rlock was
 * stopped): a settling release that records no loss, and writes the
 * outcome in an exec --every schedule (with --retry-failed, a success
 * counts).  Best effort.
 */
void	lock_release_ended(struct lock *, const char *outcome);
int	lock_settle_release(struct lock *, const char *outcome, int64_t until,
	    struct err *);

#endif
