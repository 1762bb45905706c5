/* guard.h: a process that holds the command's process group for rlock. */
#ifndef RLOCK_GUARD_H
#define RLOCK_GUARD_H

#include <stdint.h>
#include <sys/types.h>

#include "err.h"

struct guard_shared;

struct guard {
	pid_t			 pid;	/* the guard, and the group's id */
	int			 fd;	/* closing it without guard_done kills */
	struct guard_shared	*sh;	/* what rlock tells it, in shared memory */
};

/*
 * Fork the guard into the command's process group pg.  It kills the whole
 * group with SIGKILL when rlock dies, whatever kills rlock; and if rlock
 * stops acting (stopped, wedged) it acts in its place when the lock's
 * validity (valid_until, then what guard_valid says) runs out: on_lost to
 * the group (SIGKILL at once if the command is suspended), then SIGKILL
 * kill_after_ms later.  margin_ms is how long after the validity it waits
 * for rlock to act first.  0, or -1 with e filled.
 */
int	guard_start(struct guard *, pid_t pg, int64_t valid_until,
	    int64_t margin_ms, int on_lost, int64_t kill_after_ms,
	    struct err *e);
/* The lock was confirmed until valid_until (any thread). */
void	guard_valid(struct guard *, int64_t valid_until);
/* The command is (1) or is no longer (0) suspended with rlock. */
void	guard_suspended(struct guard *, int on);
/* rlock sent the loss signal itself; SIGKILL is due at kill_at. */
void	guard_killing(struct guard *, int64_t kill_at);
/* The signal the guard sent the group in rlock's place, or 0. */
int	guard_acted(struct guard *);
/* The command is over: the guard goes without killing anything. */
void	guard_done(struct guard *);
/* Reap the guard (after guard_done, or after the group was killed). */
void	guard_reap(struct guard *);

#endif
