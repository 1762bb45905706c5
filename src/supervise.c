/* supervise.c: vfork and exec the command, forward signals, act on loss. */
#include "config.h"

/*
 * The invariant: the command -- every process of it -- never runs while
 * rlock does not hold the lock, beyond the loss signal and --kill-after.
 * Every process of it: rlock is the child subreaper, so that what the
 * command leaves is reparented to rlock and found in /proc (procs.c),
 * in the command's group or not.  A forced stop (a loss, --max-runtime,
 * a terminating signal) reaches all of them, SIGKILL follows after
 * --kill-after, and the wait ends only once none is left, whether or not
 * the command itself is still there; after a normal exit, what is left is
 * said and waited for, stopped or left running as --leftovers says.
 *
 * All the signals exec cares about are blocked before the heartbeat
 * thread starts and before the fork, and handled in one sigtimedwait loop
 * here: no logic runs in a signal handler.  The loop also wakes when the
 * lock's validity runs out, so a child is signalled on time even if the
 * heartbeat thread is stuck in a connect.
 *
 * The command goes into a process group of its own (unless --foreground),
 * so that a signal on loss reaches everything it started.  A guard
 * process (guard.c), started before the command and told its group
 * before the command's exec, joins that group, kills it if rlock dies and
 * acts on the lock's validity if rlock is stopped: from the command's
 * first instruction on, whenever rlock dies or stops.
 *
 * Job control, as a shell does it for its jobs:
 *  - a command that reads the terminal (or changes its settings) is
 *    stopped by SIGTTIN/SIGTTOU, its group being in the background; if
 *    rlock has the terminal, it hands it to the command's group and lets
 *    the command go on.  Until then Ctrl-C reaches rlock, which passes it
 *    on; after, it reaches the command's group directly;
 *  - Ctrl-Z (SIGTSTP to rlock, or to the command once it has the
 *    terminal) suspends the command and rlock together: rlock takes the
 *    terminal back, and stops; its heartbeat stops with it;
 *  - when rlock runs again it confirms the lock with an extend before it
 *    lets the command go on; if the lock was lost meanwhile, the command
 *    is killed without running again.
 * Without a terminal (cron) none of this happens, and it costs nothing:
 * /dev/tty is opened the first time the command stops.
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
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"
#include "lock.h"
#include "log.h"
#include "supervise.h"
#include "util.h"

/* See next_look. */
#define FIRST_LOOK_MS	10
/*
 * A command still running this long after its start gets a guard of its
 * own program in place of the shared one (guard_promote, guard.c): one
 * over by then costs no process but its own.
 */
#define PROMOTE_MS	200

const int supervise_forwarded[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, 0
};

/* What rlock changes for itself (signals.c), and gives the child back. */
const int supervise_restored[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, 0
};

/* Job control: suspend rlock and the command together. */
static const int suspending[] = { SIGTSTP, SIGTTIN, SIGTTOU, 0 };

static void
waited_set(sigset_t *set, const sigset_t *ignored)
{
	const int	*s;

	sigemptyset(set);
	for (s = supervise_forwarded; *s != 0; s++)
		sigaddset(set, *s);
	for (s = suspending; *s != 0; s++)
		sigaddset(set, *s);
	/* Ignored at start: blocking one would queue it instead. */
	for (s = supervise_forwarded; *s != 0; s++)
		if (sigismember(ignored, *s))
			sigdelset(set, *s);
	for (s = suspending; *s != 0; s++)
		if (sigismember(ignored, *s))
			sigdelset(set, *s);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SUPERVISE_WAKE);
}

void
supervise_block_signals(const sigset_t *ignored)
{
	sigset_t	set;

	waited_set(&set, ignored);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* ------------------------------------------------------------ the child */

/*
 * In the child, between vfork and exec: it runs on rlock's memory and
 * stack until exec, so only system calls that touch nothing of rlock's,
 * and the stores that tell the parent what failed.
 */
static void __attribute__((noreturn))
child(const struct supervise *sv, pid_t parent, int tty, volatile int *err,
    volatile int *handed)
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
	if (!sv->foreground)
		setpgid(0, 0);
	/*
	 * The guard's from now on; unless it has acted, or the validity is
	 * over already (rlock was stopped since it took the lock): then the
	 * command does not start at all.
	 */
	if ((!sv->foreground && guard_command(&sv->guard, getpid()) == -1) ||
	    now_mono_ms() >= sv->lock->valid_until) {
		*err = -1;
		_exit(127);
	}
	/* Still with rlock's mask: SIGTTOU blocked lets a background group. */
	if (tty >= 0 && tcsetpgrp(tty, getpid()) == 0)
		*handed = 1;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
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

/* Reap pid: 1 with *status (128+S for signal S) and *sig (S, or 0), or 0. */
static int
reap(pid_t pid, int *status, int *sig, int flags)
{
	pid_t	r;
	int	ws;

	do
		r = waitpid(pid, &ws, flags);
	while (r == -1 && errno == EINTR);
	if (r != pid)
		return 0;
	*status = status_of(ws);
	*sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
	return 1;
}

/* Is the child stopped now?  The signal that stopped it, or 0. */
static int
stopped(pid_t pid)
{
	siginfo_t	si;

	memset(&si, 0, sizeof si);
	if (waitid(P_PID, pid, &si, WSTOPPED | WNOHANG) == -1 ||
	    si.si_pid != pid || si.si_code != CLD_STOPPED)
		return 0;
	return si.si_status;
}

static int	own_terminal(struct supervise *);

/*
 * vfork, not fork: rlock is suspended until the child has exec'ed (or
 * failed to), so the kernel copies no page tables and neither side takes
 * copy-on-write faults -- measured at about 0.3 ms of a 2.5 ms exec cycle
 * on a virtual machine, where page-table work is dear.
 * Being suspended until then is also what tells us whether exec worked,
 * with no pipe.
 */
void
supervise_init(struct supervise *sv)
{
	memset(sv, 0, sizeof *sv);
	sv->tty = -1;
	sv->guard.fd = -1;
	sv->kill_at = -1;
}

/*
 * The guard, before the command: see guard.c.  One spawned while the lock
 * was waited for (supervise_spawn_guard) is told of the lock now.
 */
static int
start_guard(struct supervise *sv, struct err *e)
{
	struct guard_terms	t = {
		.valid_until = sv->lock->valid_until,
		/* Half the drift: before the key can expire on the server. */
		.margin_ms = lock_drift(sv->lock->ttl_ms) / 2,
		.on_lost = sv->on_lost,
		.kill_after_ms = sv->kill_after_ms,
	};

	if (sv->foreground)
		return 0;
	if (t.margin_ms <= 0)
		t.margin_ms = 1;
	if (guard_spawned(&sv->guard) && guard_arm(&sv->guard, &t) == 0)
		return 0;
	return guard_start(&sv->guard, &t, sv->release, e);
}

int
supervise_spawn_guard(struct supervise *sv, const struct guard_release *rel,
    struct err *e)
{
	return guard_spawn(&sv->guard, rel, e);
}

int
supervise_spawn(struct supervise *sv, int *status, struct err *e)
{
	pid_t		parent = getpid(), pid;
	volatile int	err = 0, handed = 0;
	volatile int	tty = -1;

	/*
	 * At a terminal, with rlock in its foreground and standard input and
	 * output on it, the command gets it from the start, as a shell's job
	 * does.  Otherwise (`rlock exec job -- make | less`) the terminal
	 * stays with rlock's group, where a pager may need it, and the
	 * command gets it only if it stops for it.
	 */
	if (!sv->foreground && tcgetpgrp(0) == getpgrp() &&
	    tcgetpgrp(1) == getpgrp() && own_terminal(sv))
		tty = sv->tty;
	/* What the command leaves behind comes to us: see procs.c. */
	if (procs_adopt() == -1)
		log_verbose("cannot become the child subreaper: processes the "
		    "command leaves may escape rlock");
	if (start_guard(sv, e) == -1) {
		*status = 70;
		return -1;
	}
	if ((pid = vfork()) == -1) {
		err_set(e, ERR_SOFTWARE, "fork: %s", strerror(errno));
		guard_done(&sv->guard);
		*status = 70;
		return -1;
	}
	if (pid == 0)
		child(sv, parent, tty, &err, &handed);
	sv->pid = pid;
	sv->spawned_at = now_mono_ms();
	guard_wake(&sv->guard);
	if (handed) {
		sv->handed = 1;
		log_verbose("the command's process group has the terminal");
	}
	if (err == 0)
		return 0;
	supervise_kill(sv);
	if (err == -1) {
		/* rlock was stopped past the validity before the exec. */
		*status = EXIT_LOST;
		err_set(e, ERR_LOST, "lock '%s' was lost before '%s' could "
		    "start: its validity ended while rlock was stopped",
		    sv->name, sv->argv[0]);
		return -1;
	}
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
	else if (sv->pid > 0)	/* never kill(0): that is our group */
		kill(-sv->pid, sig);
}

/*
 * The command's other processes, found afresh (and the guard told of
 * those outside the group, which it cannot reach as a group).  How many.
 */
static int
find_rest(struct supervise *sv)
{
	pid_t	own[2];
	size_t	nown = guard_pids(&sv->guard, own);
	int	n;

	/* rlock's own guards, a retiring one too, are never the command's. */
	if (sv->ended && !procs_other_children(sv->pid, own, nown)) {
		sv->rest.n = 0;
		guard_escaped(&sv->guard, &sv->rest, 0);
		return 0;
	}
	n = procs_find(&sv->rest, sv->pid, own, nown);

	guard_escaped(&sv->guard, &sv->rest, sv->foreground ? 0 : sv->pid);
	return n > 0 ? n : 0;
}

/*
 * A forced stop: sig (then SIGCONT if cont, so that a stopped process
 * takes it) to everything the command started.  The group first, at once;
 * then each process outside it, found in /proc (with --foreground, the
 * group is rlock's own: each process is signalled by itself).
 */
static void
signal_all(struct supervise *sv, int sig, int cont)
{
	size_t	i;

	signal_child(sv, sig);
	if (cont)
		signal_child(sv, SIGCONT);
	find_rest(sv);
	for (i = 0; i < sv->rest.n; i++) {
		if (!sv->foreground && sv->rest.p[i].pgrp == sv->pid)
			continue;
		procs_kill(&sv->rest.p[i], sig);
		if (cont)
			procs_kill(&sv->rest.p[i], SIGCONT);
	}
}

/* SIGKILL is due at kill_at (unless it is already), and the guard knows. */
static void
arm_kill(struct supervise *sv, int64_t kill_at)
{
	if (sv->kill_at >= 0 && sv->kill_at <= kill_at)
		return;
	sv->kill_at = kill_at;
	guard_killing(&sv->guard, kill_at);
}

void
supervise_confirmed(void *arg, int64_t valid_until)
{
	struct supervise	*sv = arg;

	guard_valid(&sv->guard, valid_until);
}

/* ---------------------------------------------------------- the terminal */

/* rlock's controlling terminal, if it has one and holds its foreground. */
static int
own_terminal(struct supervise *sv)
{
	if (sv->tty == -1 && (sv->tty = open("/dev/tty", O_RDWR | O_NOCTTY |
	    O_CLOEXEC)) == -1)
		sv->tty = -2;
	return sv->tty >= 0 && tcgetpgrp(sv->tty) == getpgrp();
}

static int
hand_terminal(struct supervise *sv)
{
	if (sv->foreground || !own_terminal(sv) ||
	    tcsetpgrp(sv->tty, sv->pid) == -1)
		return 0;
	log_verbose("the command's process group has the terminal");
	sv->handed = 1;
	return 1;
}

/*
 * Back to rlock's group, if the command's group still has it.  rlock is
 * in the background then: SIGTTOU is blocked, which lets it.
 */
static void
take_terminal(struct supervise *sv)
{
	if (!sv->handed)
		return;
	sv->handed = 0;
	if (tcgetpgrp(sv->tty) == sv->pid)
		tcsetpgrp(sv->tty, getpgrp());
}

/* ---------------------------------------------------------- job control */

/*
 * Stop rlock with sig, as if it had not caught it (and its whole process
 * group, the shell's job, if group): returns once something continues it.
 * A job-control signal that was ignored at start stops it with SIGSTOP.
 */
static void
stop_self(struct supervise *sv, int sig, int group)
{
	sigset_t	one;

	if (sig != SIGSTOP && sigismember(&sv->ignored, sig))
		sig = SIGSTOP;
	kill(group ? 0 : getpid(), sig);
	if (sig == SIGSTOP)
		return;		/* stopped before kill returned */
	/* Pending and blocked: let it act, by default, now. */
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	pthread_sigmask(SIG_BLOCK, &one, NULL);
}

/*
 * Suspend the command and rlock with it.  tell: the command has not been
 * stopped yet; group: stop rlock's whole process group (the shell's job),
 * as the terminal would have if the command had not had it.
 */
static int
suspend(struct supervise *sv, struct heartbeat *hb, int sig, int tell,
    int group, struct err *e)
{
	int64_t	valid_until;
	char	d[32];

	sv->suspended = 1;
	guard_suspended(&sv->guard, 1);
	if (tell)
		signal_child(sv, sig == SIGSTOP ? SIGTSTP : sig);
	if (sv->handed) {
		take_terminal(sv);
		sv->give_back = 1;
	}
	heartbeat_state(hb, &valid_until, NULL, 0);
	valid_until -= now_mono_ms();
	log_verbose("suspended (SIG%s); the lock ends in %s unless rlock "
	    "runs again before", sigabbrev_np(sig),
	    duration_format(valid_until > 0 ? valid_until : 0, d, sizeof d));
	stop_self(sv, sig, group);
	/* Running again: the command goes on once an extend confirms. */
	sv->resumed_at = now_mono_ms();
	log_verbose("continued: confirming the lock before the command "
	    "goes on");
	return heartbeat_extend_now(hb, e);
}

static void
resume(struct supervise *sv)
{
	sv->suspended = 0;
	guard_suspended(&sv->guard, 0);
	if (sv->give_back) {
		sv->give_back = 0;
		hand_terminal(sv);
	}
	signal_child(sv, SIGCONT);
}

/* The command stopped of its own (sig): follow it, or hand it the tty. */
static int
child_stopped(struct supervise *sv, struct heartbeat *hb, int sig,
    struct err *e)
{
	int	has_tty = sv->handed && tcgetpgrp(sv->tty) == sv->pid;

	if ((sig == SIGTTIN || sig == SIGTTOU) && !has_tty &&
	    hand_terminal(sv)) {
		signal_child(sv, SIGCONT);
		return 0;
	}
	/* Somebody paused it (SIGSTOP) while rlock keeps the lock: fine. */
	if (sig == SIGSTOP && !has_tty)
		return 0;
	return suspend(sv, hb, sig, 0, 1, e);
}

/* --------------------------------------------------------------- loss */

void
supervise_kill(struct supervise *sv)
{
	int	status;

	if (sv->pid > 0) {
		signal_all(sv, SIGKILL, 0);
		reap(sv->pid, &status, &sv->signaled, 0);
		sv->pid = 0;
	}
	take_terminal(sv);
	guard_done(&sv->guard);
}

void
supervise_end(struct supervise *sv)
{
	guard_done(&sv->guard);
	guard_reap(&sv->guard);
	procs_free(&sv->rest);
	if (sv->tty >= 0)
		close(sv->tty);
	sv->tty = -1;
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
	int	acted = guard_acted(&sv->guard);

	sv->lost = 1;
	sv->lost_at = now_wall_ms();
	snprintf(sv->why, sizeof sv->why, "%s", why);
	if (sv->on_lost == 0) {
		/* The one line: said now, while it can still be acted on. */
		log_error("lock '%s' was lost at %s: %s; --on-lost ignore: the "
		    "command runs on unguarded", sv->name,
		    format_time(sv->lost_at, when, sizeof when), why);
		if (sv->suspended)
			resume(sv);
		return;
	}
	if (sv->suspended) {
		/* It is stopped: it never runs again. */
		sv->sent = SIGKILL;
		snprintf(sv->why, sizeof sv->why, "%s, while the command was "
		    "suspended", why);
		if (acted == 0) {
			log_verbose("lock lost: %s; killing the suspended "
			    "command", why);
			signal_all(sv, SIGKILL, 0);
		}
		return;
	}
	if (acted != 0) {
		/* rlock could not run in time; the guard did it already. */
		sv->sent = acted;
		snprintf(sv->why, sizeof sv->why, "%s (rlock was stopped "
		    "then; its guard signalled the command)", why);
		return;
	}
	sv->sent = sv->on_lost;
	log_verbose("lock lost: %s; sending SIG%s to the command", why,
	    sigabbrev_np(sv->on_lost));
	signal_all(sv, sv->on_lost, 0);
}

/*
 * --max-runtime ran out: the command gets --on-lost's signal (SIGTERM if
 * that is "ignore": a limit that stops nothing would be none), then
 * SIGCONT so that a stopped command takes it, as timeout(1) does, and
 * SIGKILL after --kill-after: every process of it, in its group or not.
 */
static void
time_out(struct supervise *sv, int64_t now)
{
	sv->timed_out = sv->on_lost != 0 ? sv->on_lost : SIGTERM;
	log_verbose("--max-runtime ran out: sending SIG%s to the command",
	    sigabbrev_np(sv->timed_out));
	signal_all(sv, sv->timed_out, 1);
	arm_kill(sv, now + sv->kill_after_ms);
}

/*
 * What the heartbeat says of the lock: lost (on_loss, and the time to
 * SIGKILL), or confirmed after a suspension (the command goes on).
 */
static void
check_lock(struct supervise *sv, struct heartbeat *hb, int64_t now,
    int64_t *valid_until)
{
	char	why[256];
	int	lost = heartbeat_state(hb, valid_until, why, sizeof why);

	/*
	 * A command that has exited since this round looked (rlock stopped
	 * in between) is over before any loss: the next round takes its
	 * exit, and what it left, if anything, is judged then.
	 */
	if ((lost || now >= *valid_until) && !sv->ended && procs_exited(sv->pid))
		return;
	if (lost)
		on_loss(sv, why);
	else if (now >= *valid_until)
		on_loss(sv, "no extend was confirmed before the lock's "
		    "validity ended");
	else if (sv->suspended && *valid_until >= sv->resumed_at +
	    sv->lock->ttl_ms - lock_drift(sv->lock->ttl_ms)) {
		log_verbose("the lock is confirmed: the command goes on");
		resume(sv);
	}
	if (sv->lost && sv->sent && sv->sent != SIGKILL)
		arm_kill(sv, now + sv->kill_after_ms);
}

/* The signals that ask the command to end: a forced stop, as in timeout(1). */
static int
terminating(int sig)
{
	return sig == SIGINT || sig == SIGTERM || sig == SIGHUP ||
	    sig == SIGQUIT;
}

/* A signal that came to rlock: job control, or one to forward. */
static int
take_signal(struct supervise *sv, struct heartbeat *hb, int sig,
    const siginfo_t *info, struct err *e)
{
	char	d[32];

	if (sig == SIGCHLD || sig == SUPERVISE_WAKE)
		return 0;
	if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
		/*
		 * To rlock, or to its group from the terminal: then a
		 * --foreground command had it too.
		 */
		return suspend(sv, hb, sig, !sv->suspended &&
		    !(sv->foreground && info->si_code == SI_KERNEL), 0, e);
	}
	/*
	 * A signal the terminal sent to our foreground group has already
	 * reached a --foreground child: do not send it twice.  Nor is an
	 * interactive command that takes Ctrl-C and goes on (a shell, psql)
	 * killed for it; if it ends, what it leaves is stopped (see ended).
	 */
	if (sv->foreground && info->si_code == SI_KERNEL) {
		if (terminating(sig))
			sv->stopping = sig;
		return 0;
	}
	if (!terminating(sig)) {
		log_verbose("forwarding SIG%s to the command",
		    sigabbrev_np(sig));
		signal_child(sv, sig);
		return 0;
	}
	/* A stop, as timeout(1) passes it on: SIGKILL --kill-after later. */
	log_verbose("forwarding SIG%s to the command and every process it "
	    "started; SIGKILL in %s to what is left", sigabbrev_np(sig),
	    duration_format(sv->kill_after_ms, d, sizeof d));
	sv->stopping = sig;
	signal_all(sv, sig, 0);
	arm_kill(sv, now_mono_ms() + sv->kill_after_ms);
	return 0;
}

/*
 * Has the guard died?  It never ends by itself while rlock runs and has
 * not said guard_done, but when it kills the group it is in, after
 * acting: a SIGKILL, or an OOM killer's choice.  Reaped here, so that
 * nothing else reaps it unseen (procs_find and reap_adopted leave it).
 */
static int
guard_died(struct supervise *sv)
{
	siginfo_t	si;

	if (sv->guard.pid <= 0 || guard_acted(&sv->guard) != 0)
		return 0;
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, sv->guard.pid, &si, WEXITED | WNOHANG) == -1)
		return errno == ECHILD;
	return si.si_pid == sv->guard.pid;
}

/*
 * A guard that died is replaced at once, before the next validity
 * deadline: rlock stopped or killed after it must still find the command
 * guarded.  If no other can start, the command is stopped.  0, or -1 with
 * e filled.
 */
static int
replace_guard(struct supervise *sv, struct err *e)
{
	pid_t	dead = sv->guard.pid;

	if (guard_replace(&sv->guard) == 0) {
		log_warn("%s: the command's guard (pid %d) died; pid %d took "
		    "its place", sv->name, (int)dead, (int)sv->guard.pid);
		return 0;
	}
	err_set(e, ERR_SOFTWARE, "the command's guard (pid %d) died and "
	    "no other could start: %s; the command was stopped", (int)dead,
	    strerror(errno));
	return -1;
}

/*
 * Reap what rlock adopted (see procs.c) and has ended, while the command
 * runs: never the command itself, whose status is read at the end, nor
 * the guard (guard_died).  One the command is found first is left for
 * then.
 */
static void
reap_adopted(struct supervise *sv)
{
	siginfo_t	si;

	for (;;) {
		memset(&si, 0, sizeof si);
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == -1 ||
		    si.si_pid == 0 || si.si_pid == sv->pid)
			return;
		if (si.si_pid == sv->guard.pid)
			return;		/* guard_reap's */
		waitpid(si.si_pid, NULL, WNOHANG);
	}
}

/*
 * The command has exited (it is not reaped yet).  After a forced stop,
 * what it leaves gets the same treatment (a terminal's signal, which
 * reached it without rlock, starts that now).  After a normal exit, what
 * it leaves is said, on stderr and in the history, and waited for,
 * stopped or left running as --leftovers says.  How many processes it
 * left (found just now).
 */
static int
ended(struct supervise *sv, int64_t now)
{
	static const char	*how[] = {
		[LEFTOVERS_WAIT] = "keeping the lock until they end "
		    "(--leftovers wait)",
		[LEFTOVERS_KILL] = "stopping them before the release "
		    "(--leftovers kill)",
		[LEFTOVERS_LEAVE] = "releasing the lock and leaving them "
		    "running (--leftovers leave)",
	};
	char			 pids[200], d[32];
	int			 n;

	sv->ended = 1;
	sv->ended_at = now;
	if ((n = find_rest(sv)) == 0)
		return 0;
	if ((sv->lost && sv->sent) || sv->timed_out || sv->kill_at >= 0)
		return n;
	if (sv->stopping) {
		signal_all(sv, sv->stopping, 0);
		arm_kill(sv, now + sv->kill_after_ms);
		return n;
	}
	sv->left = n;
	procs_format(&sv->rest, pids, sizeof pids);
	snprintf(sv->left_note, sizeof sv->left_note, "left %d process%s "
	    "running (%s)", n, n == 1 ? "" : "es", pids);
	log_warn("%s: the command exited but %s; %s", sv->name, sv->left_note,
	    sv->lost ? "the lock is lost already: leaving them running" :
	    how[sv->leftovers]);
	if (sv->leftovers == LEFTOVERS_KILL) {
		sv->stop_sig = sv->on_lost != 0 ? sv->on_lost : SIGTERM;
		log_verbose("sending SIG%s to what the command left; SIGKILL "
		    "in %s", sigabbrev_np(sv->stop_sig),
		    duration_format(sv->kill_after_ms, d, sizeof d));
		signal_all(sv, sv->stop_sig, 1);
		arm_kill(sv, now + sv->kill_after_ms);
	}
	return n;
}

/* What became of the leftovers, for the history (see ended). */
static void
left_outcome(struct supervise *sv, int64_t now)
{
	size_t	len = strlen(sv->left_note);
	char	d[32];

	if (sv->left == 0)
		return;
	if (sv->killed && sv->stop_sig)
		snprintf(sv->left_note + len, sizeof sv->left_note - len,
		    ": stopped with SIG%s, then SIGKILL",
		    sigabbrev_np(sv->stop_sig));
	else if (sv->stop_sig)
		snprintf(sv->left_note + len, sizeof sv->left_note - len,
		    ": stopped with SIG%s", sigabbrev_np(sv->stop_sig));
	else if (sv->lost || sv->timed_out || sv->stopping)
		snprintf(sv->left_note + len, sizeof sv->left_note - len,
		    ": stopped (the lock was %s)", sv->lost ? "lost" :
		    "stopped at --max-runtime or by a signal");
	else if (sv->leftovers == LEFTOVERS_LEAVE || sv->lost)
		snprintf(sv->left_note + len, sizeof sv->left_note - len,
		    ": left running");
	else
		snprintf(sv->left_note + len, sizeof sv->left_note - len,
		    ": waited for, %s", duration_format(now - sv->ended_at, d,
		    sizeof d));
}

/*
 * When to look for processes that left the group next: once a heartbeat,
 * the first time FIRST_LOOK_MS after the spawn, so that a command over by
 * then costs no look through /proc.
 */
static int64_t
next_look(const struct supervise *sv, const struct heartbeat *hb)
{
	if (sv->looked_at == 0)
		return sv->spawned_at + FIRST_LOOK_MS;
	return sv->looked_at + hb->interval_ms;
}

/* The earlier of two monotonic times, -1 meaning none. */
static int64_t
earlier(int64_t a, int64_t b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

int
supervise_wait(struct supervise *sv, struct heartbeat *hb, struct err *e)
{
	struct timespec	ts;
	siginfo_t	info;
	sigset_t	set;
	int64_t		valid_until = 0, wake, now, due;
	int		sig, status, forced, rest = 0, found, chld = 0;

	waited_set(&set, &sv->ignored);
	due = heartbeat_due(hb);
	for (;;) {
		now = now_mono_ms();
		found = -1;	/* none looked for in this round yet */
		if (!sv->ended && procs_exited(sv->pid)) {
			take_terminal(sv);
			found = ended(sv, now);
		}
		/* (A child's end comes with SIGCHLD: no look without one.) */
		if (chld && guard_died(sv) && replace_guard(sv, e) == -1)
			goto fail;
		chld = 0;
		forced = (sv->lost && sv->sent) || sv->timed_out ||
		    sv->kill_at >= 0;
		if (sv->ended) {
			/* Until none is left, unless they are to be left. */
			/* (None just now: no second look on the way out.) */
			if ((rest = found == 0 ? 0 : find_rest(sv)) == 0 ||
			    (!forced && (sv->leftovers == LEFTOVERS_LEAVE ||
			    sv->lost)))
				break;
		} else {
			reap_adopted(sv);
			/*
			 * Once a heartbeat, a look for processes that left the
			 * group, so that the guard knows them if rlock dies.
			 */
			if (sv->guard.pid > 0 && now >= next_look(sv, hb)) {
				find_rest(sv);
				sv->looked_at = now;
			}
			if (!sv->promoted && now >= sv->spawned_at +
			    PROMOTE_MS) {
				sv->promoted = 1;
				if (guard_promote(&sv->guard) == -1)
					log_verbose("the guard's own process "
					    "could not start: %s; the shared "
					    "one stays", strerror(errno));
			}
			if (!sv->foreground && !sv->suspended &&
			    (sig = stopped(sv->pid)) != 0 &&
			    child_stopped(sv, hb, sig, e) == -1)
				goto fail;
		}
		if (!hb->started && !sv->lost && now >= due &&
		    heartbeat_start(hb, e) == -1)
			goto fail;
		if (!sv->lost)
			check_lock(sv, hb, now, &valid_until);
		if (sv->max_runtime_ms > 0 && !sv->lost && !sv->timed_out &&
		    now >= sv->spawned_at + sv->max_runtime_ms)
			time_out(sv, now);
		/* exec --replace: stopped as at --max-runtime. */
		if (!sv->lost && !sv->timed_out && !sv->ended &&
		    heartbeat_replaced(hb, sv->replaced_by,
		    sizeof sv->replaced_by)) {
			sv->replaced = 1;
			time_out(sv, now);
		}
		/*
		 * After a loss nothing the command started may run on
		 * unguarded: once the command has gone, what is left goes at
		 * once.  Otherwise at --kill-after; and again whatever is
		 * found after, until none is left (a fork may race a kill).
		 */
		if (sv->ended && sv->lost && sv->sent)
			arm_kill(sv, now);
		if (sv->kill_at >= 0 && now >= sv->kill_at &&
		    (!sv->killed || (sv->ended && rest > 0))) {
			if (!sv->killed)
				log_verbose("sending SIGKILL to what is left of "
				    "the command");
			signal_all(sv, SIGKILL, 0);
			sv->killed = 1;
		}
		/* Sleep until a signal, the end of validity, or kill time. */
		wake = sv->killed ? (sv->ended ? now + 20 : -1) : sv->kill_at;
		if (!sv->lost)
			wake = earlier(wake, valid_until);
		if (sv->max_runtime_ms > 0 && !sv->timed_out)
			wake = earlier(wake, sv->spawned_at +
			    sv->max_runtime_ms);
		if (!hb->started && !sv->lost)
			wake = earlier(wake, due);
		if (!sv->ended && sv->guard.pid > 0)
			wake = earlier(wake, next_look(sv, hb));
		if (!sv->ended && !sv->promoted)
			wake = earlier(wake, sv->spawned_at + PROMOTE_MS);
		if (wake < 0)
			wake = now + 60000;
		if (wake <= now)
			wake = now + 1;
		ts.tv_sec = (wake - now) / 1000;
		ts.tv_nsec = ((wake - now) % 1000) * 1000000;
		sig = sigtimedwait(&set, &info, &ts);
		chld |= sig == SIGCHLD;
		if (sig != -1 && take_signal(sv, hb, sig, &info, e) == -1)
			goto fail;
	}
	/*
	 * Over while the lock was surely ours: seen so by rlock (the time is
	 * read after the look that found it), or by the guard when the
	 * validity ended (rlock stopped).  Its release may then come late
	 * without any loss: see finish() in cmd-exec.c.
	 */
	heartbeat_state(hb, &valid_until, NULL, 0);
	sv->over_in_time = (rest == 0 || sv->leftovers == LEFTOVERS_LEAVE) &&
	    (now_mono_ms() < valid_until || guard_found_over(&sv->guard));
	if (!sv->lost && guard_acted(&sv->guard) != 0)
		on_loss(sv, sv->suspended ? "its validity ended" : "no "
		    "extend was confirmed before the lock's validity ended");
	left_outcome(sv, now_mono_ms());
	reap(sv->pid, &status, &sv->signaled, 0);
	sv->pid = 0;
	guard_done(&sv->guard);
	return status;
fail:
	/* Unguarded is not an option: stop the command. */
	supervise_kill(sv);
	return -1;
}
