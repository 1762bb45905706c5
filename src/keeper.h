/* keeper.h: acquire --hold's keeper, which holds a lock while its owner lives. */
#ifndef RLOCK_KEEPER_H
#define RLOCK_KEEPER_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "held.h"
#include "lock.h"
#include "url.h"

struct keeper {
	/* Set by the caller before keeper_watch. */
	pid_t			 owner;
	int			 on_lost;	/* signal; 0: ignore */
	struct held_target	 target;	/* to connect afresh */

	/* Filled by keeper_watch and keeper_start. */
	int			 pidfd;		/* -1: none (old kernel) */
	uint64_t		 owner_start;	/* clock ticks after boot */
	pid_t			 pid;		/* the keeper, once started */
};

/*
 * Start watching the owner (k->owner), before the lock is taken: a pidfd
 * where the kernel has them, and its start time either way, so that a
 * reused pid is never taken for it.  0, or -1 with e filled (ERR_USAGE:
 * no such process).
 */
int	keeper_watch(struct keeper *, struct err *e);
/* The owner's command line for status, as "[rlock --hold] ARGV...". */
void	keeper_owner_command(pid_t, char *buf, size_t len);
/*
 * Fork the keeper for l, which is held and whose token is out: it leaves
 * the caller's session and descriptors behind, and keeps l on connections
 * of its own until the owner ends, a release is announced, or the lock is
 * lost.  0 once forked (k->pid), or -1 with e filled and no keeper.  Never
 * returns in the keeper.
 */
int	keeper_start(struct keeper *, const struct lock *l, struct err *e);

/*
 * `rlock release`'s side: tell the keeper of this lock and token, if one
 * runs on this host, that a release is about to be sent (the descriptor to
 * pass to keeper_released, or -1 when there is none), and then how it
 * went (rc: lock_release's).  Neither touches Redis.
 */
int	keeper_announce(const char *prefix, const char *name, const char *token);

/* rlock's binary run with this one argument is a keeper's watcher. */
#define KEEPER_WATCH_ARG	"--rlock-keeper-watch-v1"
/* main() of rlock run as the watcher: never returns if it is one. */
int	keeper_watch_main(void);
void	keeper_released(int fd, int rc);

#endif
