/* supervise.h: run exec's command under the lock and watch over it. */
#ifndef RLOCK_SUPERVISE_H
#define RLOCK_SUPERVISE_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "guard.h"
#include "heartbeat.h"
#include "procs.h"

/* exec --leftovers: what becomes of processes the command left running. */
enum leftovers {
	LEFTOVERS_WAIT,		/* keep the lock until they end (the default) */
	LEFTOVERS_KILL,		/* stop them, then release */
	LEFTOVERS_LEAVE		/* release and leave them running */
};

struct supervise {
	const char	*name;		/* the lock's, for messages */

	/* What to run. */
	char *const	*argv;		/* argv[0] searched in PATH */
	char *const	*envp;
	int		 foreground;	/* stay in rlock's process group */
	int		 on_lost;	/* signal, or 0 to only report */
	int64_t		 kill_after_ms;
	sigset_t	 ignored;	/* ignored when rlock started */
	/* The held lock: its TTL, and its validity until the heartbeat's. */
	const struct lock *lock;
	int64_t		 max_runtime_ms;	/* 0: none */
	int		 leftovers;	/* LEFTOVERS_WAIT, _KILL or _LEAVE */
	/* How the guard gives the lock back if rlock dies (or NULL). */
	const struct guard_release *release;

	/* What happened. */
	pid_t		 pid;
	int		 lost;
	char		 why[256];
	int64_t		 lost_at;	/* wall clock ms, for the message */
	int		 sent;		/* signal sent on loss, 0 if none */
	int		 timed_out;	/* signal sent at --max-runtime, or 0 */
	int		 replaced;	/* ... because a newcomer asked (--replace) */
	char		 replaced_by[160];	/* "HOST pid PID" */
	int		 signaled;	/* the signal that ended the command, or 0 */
	int		 stopping;	/* a terminating signal forwarded, or 0 */
	int		 left;		/* processes left running at a normal exit */
	/*
	 * The command (and what it left, unless left running) was over
	 * while the lock was surely ours: a release that comes after the
	 * validity (rlock stopped) is no loss.
	 */
	int		 over_in_time;
	char		 left_note[320];	/* ... and what became of them */

	/* Inside: the group's guard, the terminal, job control. */
	struct guard	 guard;
	int		 tty;		/* /dev/tty: -1 not opened yet, -2 none */
	int		 handed;	/* the command's group has the terminal */
	int		 give_back;	/* ... and gets it again on resume */
	int		 suspended;	/* stopped with rlock, not resumed yet */
	int64_t		 resumed_at;	/* when rlock ran again */
	int64_t		 spawned_at;	/* when the command started */
	int		 ended;		/* the command has exited (unreaped) */
	int64_t		 ended_at;
	int64_t		 kill_at;	/* when SIGKILL is due; -1: not */
	int		 killed;	/* ... and was sent */
	int		 stop_sig;	/* --leftovers kill: the signal sent */
	int64_t		 looked_at;	/* the last look for escaped processes */
	int		 promoted;	/* guard_promote was tried */
	struct procs	 rest;		/* the command's other processes */
};

/* The signals exec forwards, and the one the heartbeat wakes us with. */
extern const int	supervise_forwarded[];
extern const int	supervise_restored[];
#define SUPERVISE_WAKE	(SIGRTMIN)

/*
 * Block the signals the supervisor will wait for, in this thread and in
 * every thread started after, except those in ignored (ignored when rlock
 * started: they stay ignored).  Call before starting the heartbeat and
 * before supervise_spawn.
 */
void	supervise_block_signals(const sigset_t *ignored);

/* Ready a zeroed supervise for _spawn, and for _end on any path. */
void	supervise_init(struct supervise *);

/*
 * Start the guard before the lock is held (an exec that may wait for it),
 * with rel's binary and environment: see guard_spawn.  supervise_spawn
 * then tells it the lock; supervise_end ends it if there is none.  0, or
 * -1 with e filled (supervise_spawn starts one then).
 */
int	supervise_spawn_guard(struct supervise *,
	    const struct guard_release *rel, struct err *e);

/*
 * Start the guard (unless foreground), then vfork and exec.  The child
 * restores signal dispositions and mask, moves to a process group of its
 * own unless foreground (taking the terminal if rlock has it and stdin
 * and stdout are on it) and tells the guard, asks to be killed if rlock
 * dies (PR_SET_PDEATHSIG), and execs.  Returns 0 once the exec succeeded;
 * -1 when it failed, with e filled and *status 126, 127 or 70 (75: the
 * guard found the lock's validity over first), nothing left running.
 */
int	supervise_spawn(struct supervise *, int *status, struct err *e);

/*
 * Wait for the child, forwarding signals, starting the heartbeat thread
 * when it is due, following job control (the terminal, Ctrl-Z) and acting
 * on loss of the lock (from the heartbeat, or seen here when its validity
 * runs out): send on_lost to the child's group, then SIGKILL after
 * kill_after_ms.  A forced stop (a loss, --max-runtime, a terminating
 * signal forwarded) reaches every process the command started, in its
 * group or not, and returns only once none is left; after a normal exit,
 * what is left is said (left, left_note) and waited for, stopped or left
 * running as leftovers says.  Returns the child's exit status, or 128+S
 * if it died of signal S; -1 (e filled, child killed) if the heartbeat
 * could not be started.  The guard is told to go; call supervise_end
 * after the release.
 */
int	supervise_wait(struct supervise *, struct heartbeat *, struct err *e);

/* Called by the heartbeat thread with each confirmed validity. */
void	supervise_confirmed(void *sv, int64_t valid_until);

/* End and reap the guard, close the terminal: the last call, on every path. */
void	supervise_end(struct supervise *);

/* "2026-11-22 01:53:05", local time, for loss messages. */
const char *format_time(int64_t wall_ms, char *buf, size_t len);

/* Kill the child's group with SIGKILL and reap it (failure paths). */
void	supervise_kill(struct supervise *);

#endif
