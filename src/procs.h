/* procs.h: every process exec's command started, wherever it went. */
#ifndef RLOCK_PROCS_H
#define RLOCK_PROCS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc {
	pid_t		pid;
	pid_t		pgrp;
	uint64_t	start;	/* clock ticks after boot: tells a reused pid */
};

struct procs {
	struct proc	*p;
	size_t		 n, cap;
};

/*
 * Make this process the child subreaper (PR_SET_CHILD_SUBREAPER): what
 * the command starts and then leaves (a daemon's double fork, a setsid)
 * is reparented to rlock, not to init, and so stays findable.  0, or -1
 * where the kernel cannot.
 */
int	procs_adopt(void);
/* Has child pid exited?  It is left unreaped, so its pid stays its own. */
int	procs_exited(pid_t pid);

/*
 * Fill ps with every live process descended from this one, except rlock's
 * own (own[0..nown): its guards, a retiring one too) and this process's
 * threads.  Zombies among this process's own children are reaped on the
 * way, but `keep` (the command, whose status is read at the end) and
 * rlock's own (a guard's death is the supervisor's to see).  The number
 * found, or -1 if /proc cannot be read.
 */
int	procs_find(struct procs *ps, pid_t keep, const pid_t *own, size_t nown);

/*
 * Has this process a child other than keep and own[0..nown), running or
 * not?  1 when it cannot tell.  Once the command has exited, every process
 * it left has an ancestor among our children (we are the subreaper): this
 * one small read saves the walk through /proc on most exits.
 */
int	procs_other_children(pid_t keep, const pid_t *own, size_t nown);

/*
 * Send sig to p, if it is still the process that was found (its start
 * time unchanged: a pid freed and reused meanwhile is left alone).
 */
void	procs_kill(const struct proc *p, int sig);

/* "pid 12" or "pids 12 34 56", at most len bytes, "..." if cut short. */
const char *procs_format(const struct procs *ps, char *buf, size_t len);

void	procs_free(struct procs *ps);

#endif
