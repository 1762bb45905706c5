/* supervise.c: vfork and exec the command, forward signals, act on loss. */
#include "config.h"

/*
 * All the signals exec cares about are blocked before the heartbeat
 * thread starts and before the fork, and handled in one sigtimedwait loop
 * here: no logic runs in a signal handler.  The loop also wakes when the
 * lock's validity runs out, so a child is signalled on time even if the
 * heartbeat thread is stuck in a connect.
 *
 * The child goes into its own process group (unless --foreground), so
 * that a signal on loss reaches everything it started, and it asks the
 * kernel for SIGKILL when rlock dies: a child must never run on unguarded
 * after its lock expired.
 */

#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "supervise.h"
#include "util.h"

const int supervise_forwarded[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, 0
};

/* What rlock changes for itself (cmd.c), and gives the child back. */
const int supervise_restored[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, 0
};

static void
waited_set(sigset_t *set)
{
	const int	*s;

	sigemptyset(set);
	for (s = supervise_forwarded; *s != 0; s++)
		sigaddset(set, *s);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SUPERVISE_WAKE);
}

void
supervise_block_signals(void)
{
	sigset_t	set;

	waited_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/*
 * In the child, between vfork and exec: it runs on rlock's memory and
 * stack until exec, so only system calls that touch nothing of rlock's,
 * and the one store of exec's errno that tells the parent why it failed.
 */
static void __attribute__((noreturn))
child(const struct supervise *sv, pid_t parent, volatile int *err)
{
	struct sigaction	sa;
	sigset_t		none;
	const int		*s;

	/*
	 * Caught signals go back to their default at exec by themselves; the
	 * ones rlock ignores, or caught, go back to how rlock found them
	 * (a nohup'ed rlock runs a nohup'ed command).  The child has its
	 * own dispositions: vfork shares memory, not signal handlers.
	 */
	memset(&sa, 0, sizeof sa);
	for (s = supervise_restored; *s != 0; s++) {
		sa.sa_handler = sigismember(&sv->ignored, *s) ? SIG_IGN :
		    SIG_DFL;
		sigaction(*s, &sa, NULL);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (!sv->foreground)
		setpgid(0, 0);
#ifdef HAVE_PRCTL
	prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
	/* rlock may have died before prctl: then nobody guards us. */
	if (getppid() != parent)
		_exit(127);
	execvpe(sv->argv[0], sv->argv, sv->envp);
	*err = errno;
	_exit(127);
}

static int
status_of(int ws)
{
	if (WIFEXITED(ws))
		return WEXITSTATUS(ws);
	if (WIFSIGNALED(ws))
		return 128 + WTERMSIG(ws);
	return 128;
}

static int
reap(pid_t pid, int *status, int flags)
{
	pid_t	r;
	int	ws;

	do
		r = waitpid(pid, &ws, flags);
	while (r == -1 && errno == EINTR);
	if (r != pid)
		return 0;
	*status = status_of(ws);
	return 1;
}

/* Has the child exited?  It is left unreaped, so its pid stays its own. */
static int
exited(pid_t pid)
{
	siginfo_t	si;

	memset(&si, 0, sizeof si);
	if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1)
		return errno == ECHILD;
	return si.si_pid == pid;
}

/*
 * vfork, not fork: rlock is suspended until the child has exec'ed (or
 * failed to), so the kernel copies no page tables and neither side takes
 * copy-on-write faults -- measured at about 0.3 ms of a 2.5 ms exec cycle
 * on a virtual machine, where page-table work is dear.
 * Being suspended until then is also what tells us whether exec worked,
 * with no pipe.
 */
int
supervise_spawn(struct supervise *sv, int *status, struct err *e)
{
	pid_t		parent = getpid(), pid;
	volatile int	err = 0;
	int		ws;

	if ((pid = vfork()) == -1) {
		err_set(e, ERR_SOFTWARE, "fork: %s", strerror(errno));
		*status = 70;
		return -1;
	}
	if (pid == 0)
		child(sv, parent, &err);
	if (err == 0) {
		sv->pid = pid;
		return 0;
	}
	reap(pid, &ws, 0);
	*status = err == ENOENT ? 127 : 126;
	err_set(e, ERR_USAGE, "cannot run '%s': %s", sv->argv[0],
	    strerror(err));
	return -1;
}

static void
signal_child(struct supervise *sv, int sig)
{
	if (sv->foreground)
		kill(sv->pid, sig);
	else
		kill(-sv->pid, sig);
}

void
supervise_kill(struct supervise *sv)
{
	int	status;

	if (sv->pid <= 0)
		return;
	signal_child(sv, SIGKILL);
	reap(sv->pid, &status, 0);
	sv->pid = 0;
}

const char *
format_time(int64_t wall_ms, char *buf, size_t len)
{
	time_t		t = (time_t)(wall_ms / 1000);
	struct tm	tm;

	strftime(buf, len, "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
	return buf;
}

static void
on_loss(struct supervise *sv, const char *why)
{
	char	when[64];

	sv->lost = 1;
	sv->lost_at = now_wall_ms();
	snprintf(sv->why, sizeof sv->why, "%s", why);
	if (sv->on_lost == 0) {
		/* The one line: said now, while it can still be acted on. */
		log_error("lock '%s' was lost at %s: %s; --on-lost ignore: the "
		    "command runs on unguarded", sv->name,
		    format_time(sv->lost_at, when, sizeof when), why);
		return;
	}
	sv->sent = sv->on_lost;
	log_verbose("lock lost: %s; sending SIG%s to the command", why,
	    sigabbrev_np(sv->on_lost));
	signal_child(sv, sv->on_lost);
}

int
supervise_wait(struct supervise *sv, struct heartbeat *hb, struct err *e)
{
	struct timespec	ts;
	siginfo_t	info;
	sigset_t	set;
	int64_t		valid_until, wake, kill_at = -1, now, due;
	char		why[256];
	int		sig, status, killed = 0;

	waited_set(&set);
	due = heartbeat_due(hb);
	for (;;) {
		if (exited(sv->pid))
			break;
		now = now_mono_ms();
		if (!hb->started && !sv->lost && now >= due &&
		    heartbeat_start(hb, e) == -1) {
			/* Unguarded is not an option: stop the command. */
			supervise_kill(sv);
			return -1;
		}
		if (!sv->lost) {
			if (heartbeat_state(hb, &valid_until, why, sizeof why))
				on_loss(sv, why);
			else if (now >= valid_until)
				on_loss(sv, "no extend was confirmed before "
				    "the lock's validity ended");
			if (sv->lost && sv->sent)
				kill_at = now + sv->kill_after_ms;
		}
		if (kill_at >= 0 && now >= kill_at && !killed) {
			log_verbose("the command outlived --kill-after: "
			    "sending SIGKILL");
			signal_child(sv, SIGKILL);
			killed = 1;
		}
		/* Sleep until a signal, the end of validity, or kill time. */
		wake = sv->lost ? (killed ? -1 : kill_at) : valid_until;
		if (!hb->started && !sv->lost && due < wake)
			wake = due;
		if (wake < 0)
			wake = now + 60000;
		if (wake <= now)
			wake = now + 1;
		ts.tv_sec = (wake - now) / 1000;
		ts.tv_nsec = ((wake - now) % 1000) * 1000000;
		sig = sigtimedwait(&set, &info, &ts);
		if (sig == -1 || sig == SIGCHLD || sig == SUPERVISE_WAKE)
			continue;
		/*
		 * A signal the terminal sent to our foreground group has
		 * already reached a --foreground child: do not send it twice.
		 */
		if (sv->foreground && info.si_code == SI_KERNEL)
			continue;
		log_verbose("forwarding SIG%s to the command",
		    sigabbrev_np(sig));
		signal_child(sv, sig);
	}
	/*
	 * After a loss nothing the command started may run on unguarded.
	 * The child is not reaped yet, so its group id is still its own.
	 */
	if (sv->lost && sv->sent && !sv->foreground)
		kill(-sv->pid, SIGKILL);
	reap(sv->pid, &status, 0);
	sv->pid = 0;
	return status;
}
