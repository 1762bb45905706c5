/* supervise.h: run exec's command under the lock and watch over it. */
#ifndef RLOCK_SUPERVISE_H
#define RLOCK_SUPERVISE_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "heartbeat.h"

struct supervise {
	const char	*name;		/* the lock's, for messages */

	/* What to run. */
	char *const	*argv;		/* argv[0] searched in PATH */
	char *const	*envp;
	int		 foreground;	/* stay in rlock's process group */
	int		 on_lost;	/* signal, or 0 to only report */
	int64_t		 kill_after_ms;
	sigset_t	 ignored;	/* ignored when rlock started */

	/* What happened. */
	pid_t		 pid;
	int		 lost;
	char		 why[256];
	int64_t		 lost_at;	/* wall clock ms, for the message */
	int		 sent;		/* signal sent on loss, 0 if none */
};

/* The signals exec forwards, and the one the heartbeat wakes us with. */
extern const int	supervise_forwarded[];
extern const int	supervise_restored[];
#define SUPERVISE_WAKE	(SIGRTMIN)

/*
 * Block the signals the supervisor will wait for, in this thread and in
 * every thread started after.  Call before starting the heartbeat and
 * before supervise_spawn.
 */
void	supervise_block_signals(void);

/*
 * Fork and exec.  The child restores signal dispositions and mask, moves
 * to its own process group unless foreground, asks to be killed if rlock
 * dies (PR_SET_PDEATHSIG), and execs.  Returns 0 once the exec succeeded;
 * -1 when it failed, with e filled and *status 126 or 127, the child
 * already reaped.
 */
int	supervise_spawn(struct supervise *, int *status, struct err *e);

/*
 * Wait for the child, forwarding signals, starting the heartbeat thread
 * when it is due, and acting on loss of the lock (from the heartbeat, or
 * seen here when its validity runs out): send on_lost to the child's
 * group, then SIGKILL after kill_after_ms.  Returns the child's exit
 * status, or 128+S if it died of signal S; -1 (e filled, child killed)
 * if the heartbeat could not be started.
 */
int	supervise_wait(struct supervise *, struct heartbeat *, struct err *e);

/* "2026-11-22 01:53:05", local time, for loss messages. */
const char *format_time(int64_t wall_ms, char *buf, size_t len);

/* Kill the child's group with SIGKILL and reap it (failure paths). */
void	supervise_kill(struct supervise *);

#endif
