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

#endif
