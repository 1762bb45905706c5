/* heartbeat.h: keep a held lock alive from a thread with its own connection. */
#ifndef RLOCK_HEARTBEAT_H
#define RLOCK_HEARTBEAT_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "err.h"
#include "lock.h"
#include "quorum.h"
#include "redis.h"

struct heartbeat {
	pthread_t		 thread;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;	/* on CLOCK_MONOTONIC */

	/* The thread's own copy of the lock, on its own connections. */
	struct quorum		 q;
	struct redis_opts	 ropts;
	struct redis_opts	 base;
	struct lock		 l;
	int64_t			 interval_ms;

	/* Under mu. */
	int			 stop;
	int			 lost;
	char			 why[256];
	int64_t			 valid_until;	/* CLOCK_MONOTONIC ms */
	unsigned		 extends;

	/* Woken with notify_sig when the lock is lost. */
	pthread_t		 notify;
	int			 notify_sig;
};

/*
 * Start extending l (held, with l->ttl_ms and l->valid_until set) every
 * interval_ms on new connections to the same servers.  On loss the
 * thread records why, sends notify_sig to the calling thread (which must
 * have it blocked and wait for it), and stops.  0, or -1 with e filled.
 */
int	heartbeat_start(struct heartbeat *, const struct lock *l,
	    const char *prefix, const struct url *urls, int nurls,
	    const struct redis_opts *opts, int64_t interval_ms, int notify_sig,
	    struct err *e);
/* Stop the thread and wait for it; safe to call once after start. */
void	heartbeat_stop(struct heartbeat *);
/* Whether the lock is lost (why filled), and until when it is valid. */
int	heartbeat_state(struct heartbeat *, int64_t *valid_until, char *why,
	    size_t whylen);

#endif
