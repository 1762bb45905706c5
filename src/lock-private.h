/* lock-private.h: what lock.c shares with inspect.c, and no one else. */
#ifndef RLOCK_LOCK_PRIVATE_H
#define RLOCK_LOCK_PRIVATE_H

#include "lock.h"

/* The history's length and expiry, as script arguments. */
struct history_args {
	char	len[16], ttl[24];
};

void		 lock_history_args(const struct lock *, struct history_args *);
/* s, or "" for NULL. */
const char	*lock_or_empty(const char *);
/* An integer reply, or a string of digits; 0 otherwise. */
long long	 lock_to_ll(const struct redis_reply *);

/*
 * Numbers from a server are bounded before any arithmetic: a lock's TTL
 * is 30 days at most, and times (ms since the epoch) are under
 * LOCK_REPLY_MAX_TIME.
 */
#define LOCK_REPLY_MAX_TTL	(30LL * 24 * 3600 * 1000)
#define LOCK_REPLY_MAX_TIME	(1LL << 50)	/* the year 37648 */
long long	 lock_clamp(long long v, long long min, long long max);
/* Whether element i of r is an integer within [min, max]. */
int		 lock_int_at(const struct redis_reply *r, size_t i,
		    long long min, long long max);

/* The waiting's bounds, which lock.c and lock-wait.c share. */
/*
 * A blocking read answered with an error (the wake list is not a list)
 * returns at once: the next round waits WAIT_ERR_PAUSE_MS first, doubled
 * each time in a row, never past the round's own sleep or --wait, instead
 * of sending the next BLPOP and script straight away.
 */
#define WAIT_ERR_PAUSE_MS	10
/* A quorum's proposed fence floor is this far ahead of our clock. */
#define FENCE_LEAD_MS		1000
/*
 * A waiter's entry is a lease of its own: each attempt renews it, and a
 * waiter makes one at least every WAITER_RENEW_MS (its blocking read
 * times out then), so the lease lasts that, the attempt's round trip
 * (--timeout, counted up to WAITER_TRIP_MS) and WAITER_SLACK_MS more: 5 s
 * at most, whatever --timeout.  A waiter that died is forgotten that long
 * after its last attempt, however long the holder's TTL: its place in a
 * --fifo line, its line in status, and an exclusive waiter's mark that
 * keeps new readers out.  A live waiter whose attempt takes longer than
 * the lease is forgotten meanwhile, and listed again by that attempt with
 * the time it first came (its turn is kept).
 */
#define WAITER_RENEW_MS		2000
#define WAITER_TRIP_MS		2000
/* A wait's pauses while its server is away: see ride_through. */
#define RIDE_FIRST_MS		50
#define RIDE_MAX_MS		1000
#define WAITER_SLACK_MS		1000

/*
 * Shared by the acquire (lock.c) and the release, extend and settling
 * (lock-release.c): reply shapes a quorum's replies are checked against,
 * the count of servers a call reached, the wait for replicas, and the
 * release script's call (a partial acquire gives back with it).
 */
int		 lock_flag_shape(const struct redis_reply *, void *);
int		 lock_settled_grant(struct redis_reply **, const int *, int,
		    void *);
int		 lock_count(const int *, int);
void		 lock_await_replicas(struct lock *, int *);
int		 lock_release_script(struct lock *, const char *outcome,
		    int give_back, int keep_listed, int settling, struct err *);

/* From lock.c, for lock-wait.c: a waiter's own wake list, a retry's
 * jitter. */
const char	*lock_own_wake(const struct lock *);
unsigned	 lock_jitter(void);
/* lock-wait.c: between a waiter's attempts (see there). */
void		 lock_note_wait(struct lock *);
int64_t		 lock_wait_chunk(struct lock *, int64_t start, int64_t deadline,
		    int64_t sleep, int64_t ttl_ms);
int		 lock_pause_ms(int64_t ms, struct err *);
int		 lock_wait_error_pause(struct lock *, int64_t deadline,
		    struct err *);
int		 lock_ride_through(struct lock *, int64_t deadline,
		    int64_t *pause, int *rides, int answered, struct err *);
int64_t		 lock_own_retry_by(const struct lock *, int64_t *retry_by);

#endif
