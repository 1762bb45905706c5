/* signals.c: a caught signal sets a flag; no logic runs in a handler. */

/*
 * The handler only records which signal came.  The waits in transport.c,
 * quorum.c and lock.c see the flag and return ERR_INTERRUPTED, so the
 * command layer can release the lock before it dies of the signal.
 * exec blocks these signals and takes them with sigwait (supervise.c).
 */

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "signals.h"

volatile sig_atomic_t	signal_caught;

/* The signals that were ignored when rlock started (see signals_catch). */
static sigset_t	ignored_at_start;

static void
on_signal(int sig)
{
	signal_caught = sig;
}

void
signals_ignored(sigset_t *set)
{
	*set = ignored_at_start;
}

/*
 * A signal that was ignored when rlock started (nohup's SIGHUP, SIGINT
 * and SIGQUIT of a background job in a script) stays ignored in every
 * phase, waiting and holding, and for the command: whoever ignored it
 * meant rlock and what it runs.  The job-control signals are only
 * looked at here; exec blocks and handles them (supervise.c).
 */
void
signals_catch(void)
{
	struct sigaction	sa, old;
	const int		sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	const int		jobs[] = { SIGTSTP, SIGTTIN, SIGTTOU };
	size_t			i;

	sigemptyset(&ignored_at_start);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		if (sigaction(sigs[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			sigaddset(&ignored_at_start, sigs[i]);
		else
			sigaction(sigs[i], &sa, NULL);
	}
	for (i = 0; i < sizeof jobs / sizeof jobs[0]; i++)
		if (sigaction(jobs[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			sigaddset(&ignored_at_start, jobs[i]);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old);
	if (old.sa_handler == SIG_IGN)
		sigaddset(&ignored_at_start, SIGPIPE);
}

void
signals_reraise(void)
{
	sigset_t	set;
	int		sig = signal_caught;

	if (sig == 0)
		return;
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}
