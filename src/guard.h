/* guard.h: a process that holds the command's process group for rlock. */
#ifndef RLOCK_GUARD_H
#define RLOCK_GUARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "procs.h"

struct guard_shared;
struct held_target;
struct lock;

/*
 * How the guard gives the lock back when rlock has died: rlock's own
 * binary (opened before the guard starts), exec'ed as the release
 * (GUARD_RELEASE_ARG, guard_release_main), which gives back the held lock
 * packed here (held_pack: its target as rlock settled it, and its
 * identity) from the guard's shared memory, GUARD_FD_SHARED.  Nothing of
 * it is on a command line or in an environment the command could read.
 */
struct guard_release {
	int		  exe;		/* /proc/self/exe, O_PATH; -1: none */
	char		 *pack;		/* the held lock (held_pack) */
	size_t		  len;
	int		  syslog;	/* the release says what failed there */
	char		**envp;
};
#define GUARD_FD_EXE		3
#define GUARD_FD_SHARED		4	/* the guard's state (a memfd) */

/* rlock's binary run with this one argument is the guard (main.c). */
#define GUARD_ARG		"--rlock-guard-v1"
/* ... and with this one, the guard's release, once rlock has died. */
#define GUARD_RELEASE_ARG	"--rlock-guard-release-v1"

struct guard {
	pid_t			 pid;	/* the guard */
	int			 fd;	/* closing it without guard_done kills */
	struct guard_shared	*sh;	/* what rlock tells it, in shared memory */
	/* A shared guard (see guard.c): its stack, and for its successor: */
	void			*stack;
	pid_t			 shared_pid;	/* once promoted: the shared */
	int			 shared_fd;	/* ... and its pipe; else -1 */
	int			 shm, exe, own_exe;
	int			 replaced;	/* guard_replace started one */
	const struct guard_release *rel;
};

/*
 * What the guard is told of the lock: if rlock stops acting (stopped,
 * wedged) it acts in its place when the lock's validity (valid_until,
 * then what guard_valid says) runs out: on_lost to the group (SIGKILL at
 * once if the command is suspended), then SIGKILL kill_after_ms later.
 * margin_ms is how long after the validity it waits for rlock to act
 * first.
 */
struct guard_terms {
	int64_t	valid_until;
	int64_t	margin_ms;
	int	on_lost;
	int64_t	kill_after_ms;
};

/*
 * Start the guard, before the command: rlock's binary again, exec'ed
 * (guard_exec_main), or forked if that fails.  It kills the command's
 * whole process group (once guard_command has named it) with SIGKILL
 * when rlock dies, whatever kills rlock, and then, once none of it is
 * left, gives the lock back as rel says (if not NULL); and it acts on
 * the terms t when rlock does not.  0, or -1 with e filled.
 */
int	guard_start(struct guard *, const struct guard_terms *t,
	    const struct guard_release *rel, struct err *e);
/*
 * guard_start in two steps, for an exec that waits: guard_spawn starts a
 * guard that guards nothing yet (no lock, no command: if rlock dies, it
 * just exits), with rel's binary and environment, while the lock is
 * waited for; guard_arm tells it the lock once held: its terms, and the
 * pack of the lock in the rel given to guard_spawn.  The guard's start is
 * then off the path from a hand-over to the command.  guard_arm: 0; -1
 * if the spawned guard has gone (guard_start a new one).
 */
int	guard_spawn(struct guard *, const struct guard_release *rel,
	    struct err *e);
int	guard_arm(struct guard *, const struct guard_terms *t);
int	guard_spawned(const struct guard *);
int	guard_command(const struct guard *, pid_t pg);
int	guard_promote(struct guard *);
/*
 * The guard has died (SIGKILL: it never ends by itself while rlock runs
 * and has not said guard_done), and the caller has reaped it: start
 * another in its place, a program of its own on the same shared state,
 * which joins the command's group.  0, or -1 (errno set): the command is
 * unguarded, and must be stopped.
 */
int	guard_replace(struct guard *);
/*
 * Whether the guard found nothing of the command left when the lock's
 * validity ended (rlock stopped after the command ended): it did not act,
 * and the lock was rlock's to the command's end.
 */
int	guard_found_over(const struct guard *);
/* rlock's own guard processes (the current, a retiring shared): how many. */
size_t	guard_pids(const struct guard *, pid_t pids[2]);
void	guard_wake(struct guard *);
/* main() of rlock run as the guard (GUARD_ARG): never returns if it is. */
int	guard_exec_main(void);
/*
 * Ready rel for the lock l, held on t (exec's, as the heartbeat clones
 * it); syslog: the release's failures go to syslog, as exec's do.  0, or
 * -1 (rel left empty: the lock then expires by itself).
 */
int	guard_release_init(struct guard_release *rel, int syslog);
void	guard_release_pack(struct guard_release *rel, const struct lock *l,
	    const struct held_target *t);
/*
 * main() of rlock run as the guard's release (GUARD_RELEASE_ARG): give
 * back the lock packed in the shared memory.  An exit status.
 */
int	guard_release_main(void);
void	guard_release_free(struct guard_release *rel);
/*
 * The command's processes outside its group pg (0: all of ps): the
 * guard kills them too if rlock dies.
 */
void	guard_escaped(struct guard *, const struct procs *ps, pid_t pg);
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
