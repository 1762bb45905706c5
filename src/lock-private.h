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

#endif
