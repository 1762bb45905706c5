/* heartbeat.h: keep a held lock alive from a thread with its own connection. */
#ifndef RLOCK_HEARTBEAT_H
#define RLOCK_HEARTBEAT_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#include "err.h"
#include "held.h"

struct heartbeat {
	pthread_t		 thread;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;	/* on CLOCK_MONOTONIC */

	/*
	 * The thread's own clone of the held lock (held.h).  Its valid_until
	 * is the lock's one deadline: the thread extends it, any thread reads
	 * it (heartbeat_state); nothing keeps a copy.
	 */
	struct held		 h;
	int64_t			 interval_ms;

	/* Under mu. */
	int			 stop;
	int			 lost;
	char			 why[256];
	int			 started;
	int			 now;		/* extend at once, then wake */
	/* An extend said a newcomer asked us to stop (exec --replace). */
	int			 replaced;
	char			 replaced_by[160];

	/* Told of every confirmed extend, from the thread (may be NULL). */
	void			(*on_extend)(void *, int64_t valid_until);
	void			*on_extend_arg;

	/* Woken with notify_sig when the lock is lost. */
	pthread_t		 notify;
	int			 notify_sig;
};

/*
 * Get ready to extend l (held, with l->ttl_ms and l->valid_until set)
 * every interval_ms, on a clone of it on new connections to t's servers
 * (held_clone; t's must outlive hb).  On loss the thread records why,
 * sends notify_sig to the calling thread (which must have it blocked and
 * wait for it), and stops.
 */
void	heartbeat_init(struct heartbeat *, const struct lock *l,
	    const struct held_target *t, int64_t interval_ms, int notify_sig);
/*
 * The monotonic time by which the thread must be running.  A command that
 * is over before then (`rlock exec job -- true`) never costs a thread.
 */
int64_t	heartbeat_due(const struct heartbeat *);
/* Start the thread (once).  0, or -1 with e filled. */
int	heartbeat_start(struct heartbeat *, struct err *e);
/*
 * Stop the thread, if it started, wait for it, give back to l (the lock
 * heartbeat_init cloned, or NULL) what it learned of the lock (held_return:
 * its validity, the servers that still hold it), and free what init made.
 */
void	heartbeat_stop(struct heartbeat *, struct lock *l);
/*
 * Extend as soon as possible (starting the thread if need be), and send
 * notify_sig when that extend is confirmed, as on loss.  0, or -1 with e
 * filled.
 */
int	heartbeat_extend_now(struct heartbeat *, struct err *e);
/* Whether the lock is lost (why filled), and until when it is valid. */
int	heartbeat_state(struct heartbeat *, int64_t *valid_until, char *why,
	    size_t whylen);

/*
 * Whether an extend said that a newcomer asked the holder to stop (exec
 * --replace): then who ("HOST pid PID") in by.  The thread goes on
 * extending: the lock stays ours until the command is stopped.
 */
int	heartbeat_replaced(struct heartbeat *, char *by, size_t bylen);

#endif
