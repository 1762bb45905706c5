/* guard.c: the process that keeps the command from outliving rlock's lock. */
#include "config.h"

/*
 * PR_SET_PDEATHSIG reaches the command's direct child only: what the
 * command starts (`sh -c 'step1; step2'`, `daemon &`) is reparented to
 * init when rlock is SIGKILLed and runs on after the lock expired.  And a
 * stopped rlock (SIGSTOP, a debugger) extends nothing, so the lock
 * expires under a command that keeps running.  The guard covers both:
 *
 *  - it joins the command's process group, so the group exists (and its
 *    id stays unused by anyone else) for as long as the guard lives, and
 *    signals to the group reach everything the command started even after
 *    the command itself has exited;
 *  - it reads the read end of a pipe whose only write end is rlock's: end
 *    of file without guard_done means rlock is gone, and the guard
 *    kills the group;
 *  - it sleeps until the lock's validity ends (plus a margin that leaves
 *    rlock time to act first), reading the validity rlock last confirmed
 *    from shared memory, and does what rlock would have done if rlock has
 *    not done it: the loss signal to the group, then SIGKILL.
 *
 * The guard blocks every signal, so what rlock or a terminal sends to the
 * group (Ctrl-C, Ctrl-Z, the loss signal) does not touch it; only SIGKILL
 * does, which ends the group anyway.  It runs only async-signal-safe
 * system calls: rlock's heartbeat thread may be running when it forks.
 *
 * It is forked with _Fork (no fork handlers: they would write, and so copy,
 * pages of libc's), and it closes every descriptor it inherited, so that
 * no pipe rlock's caller reads stays open in it.
 */

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "guard.h"
#include "util.h"

struct guard_shared {
	_Atomic int64_t	valid_until;	/* CLOCK_MONOTONIC ms */
	_Atomic int64_t	kill_at;	/* 0: rlock has sent no loss signal */
	_Atomic int	suspended;
	_Atomic int	done;
	_Atomic int	acted;		/* the signal the guard sent, if any */
	/* Set once, before the fork. */
	int64_t		margin_ms;
	int64_t		kill_after_ms;
	int		on_lost;
};

static void
close_all_but_0(void)
{
#ifdef HAVE_CLOSE_RANGE
	if (close_range(1, ~0U, 0) == 0)
		return;
#endif
	long	max = sysconf(_SC_OPEN_MAX), fd;

	if (max < 0 || max > 65536)
		max = 65536;
	for (fd = 1; fd < max; fd++)
		close((int)fd);
}

static void __attribute__((noreturn))
kill_group(struct guard_shared *sh, pid_t pg)
{
	atomic_store(&sh->acted, SIGKILL);
	kill(-pg, SIGKILL);	/* the guard is in the group: this ends it */
	_exit(0);
}

static void __attribute__((noreturn))
guard_main(struct guard_shared *sh, pid_t parent, pid_t pg)
{
	struct pollfd	pfd = { .fd = 0, .events = POLLIN };
	int64_t		now, wake, valid, k, kill_at = -1;
	int		timeout, signalled = 0;
	char		buf[64];
	ssize_t		n;

	/* rlock may have died before there was a pipe to report it. */
	if (getppid() != parent)
		kill_group(sh, pg);
	for (;;) {
		if (atomic_load(&sh->done))
			_exit(0);
		now = now_mono_ms();
		valid = atomic_load(&sh->valid_until) + sh->margin_ms;
		if ((k = atomic_load(&sh->kill_at)) > 0 && !signalled) {
			/* rlock signalled the loss itself: back up its SIGKILL. */
			signalled = 1;
			kill_at = k + sh->margin_ms;
		}
		if (!signalled && now >= valid) {
			if (atomic_load(&sh->suspended) || sh->on_lost == SIGKILL)
				kill_group(sh, pg);
			signalled = 1;
			if (sh->on_lost != 0) {
				atomic_store(&sh->acted, sh->on_lost);
				kill(-pg, sh->on_lost);
				kill_at = now + sh->kill_after_ms;
			}
		}
		if (kill_at >= 0 && now >= kill_at)
			kill_group(sh, pg);
		wake = !signalled ? valid : kill_at;
		if (wake < 0)
			timeout = -1;
		else if (wake - now > 3600000)
			timeout = 3600000;
		else
			timeout = (int)(wake - now);
		if (poll(&pfd, 1, timeout) <= 0)
			continue;
		n = read(0, buf, sizeof buf);
		if (n == 0) {
			/* rlock is gone; unless it said so first, it died. */
			if (atomic_load(&sh->done))
				_exit(0);
			kill_group(sh, pg);
		}
		/* Anything else is a wake-up: look at the shared state again. */
	}
}

int
guard_start(struct guard *g, pid_t pg, int64_t valid_until, int64_t margin_ms,
    int on_lost, int64_t kill_after_ms, struct err *e)
{
	struct guard_shared	*sh;
	sigset_t		 all, old;
	pid_t			 parent = getpid(), pid;
	int			 p[2];

	memset(g, 0, sizeof *g);
	g->fd = -1;
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		err_set(e, ERR_SOFTWARE, "mmap: %s", strerror(errno));
		return -1;
	}
	atomic_init(&sh->valid_until, valid_until);
	atomic_init(&sh->kill_at, 0);
	atomic_init(&sh->suspended, 0);
	atomic_init(&sh->done, 0);
	atomic_init(&sh->acted, 0);
	sh->margin_ms = margin_ms;
	sh->kill_after_ms = kill_after_ms;
	sh->on_lost = on_lost;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1) {
		err_set(e, ERR_SOFTWARE, "pipe: %s", strerror(errno));
		munmap(sh, sizeof *sh);
		return -1;
	}
	/* Blocked before the fork, so that no signal finds it half set up. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if ((pid = _Fork()) == -1) {
		err_set(e, ERR_SOFTWARE, "fork: %s", strerror(errno));
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(p[0]);
		close(p[1]);
		munmap(sh, sizeof *sh);
		return -1;
	}
	if (pid == 0) {
		setpgid(0, pg);
		if (p[0] != 0) {
			dup2(p[0], 0);
			close(p[0]);
		}
		close_all_but_0();
#ifdef HAVE_PRCTL
		prctl(PR_SET_NAME, "rlock-guard");
#endif
		guard_main(sh, parent, pg);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* Both sides set the group: it is in it when this returns. */
	setpgid(pid, pg);
	close(p[0]);
	g->pid = pid;
	g->fd = p[1];
	/* The heartbeat thread may look for it (guard_valid) from now on. */
	__atomic_store_n(&g->sh, sh, __ATOMIC_RELEASE);
	return 0;
}

/* Make the guard look at the shared state now; a full pipe already will. */
static void
poke(struct guard *g)
{
	char	c = 0;
	ssize_t	n;

	if (g->fd < 0)
		return;
	do
		n = write(g->fd, &c, 1);
	while (n == -1 && errno == EINTR);
}

void
guard_valid(struct guard *g, int64_t valid_until)
{
	struct guard_shared	*sh = __atomic_load_n(&g->sh, __ATOMIC_ACQUIRE);
	int64_t			 old;

	if (sh == NULL)
		return;
	/*
	 * Later only (the heartbeat thread and the supervisor may both say);
	 * the guard finds it when it wakes at the old time.
	 */
	old = atomic_load(&sh->valid_until);
	while (valid_until > old &&
	    !atomic_compare_exchange_weak(&sh->valid_until, &old, valid_until))
		;
}

void
guard_suspended(struct guard *g, int on)
{
	if (g->sh == NULL)
		return;
	atomic_store(&g->sh->suspended, on);
}

void
guard_killing(struct guard *g, int64_t kill_at)
{
	if (g->sh == NULL)
		return;
	atomic_store(&g->sh->kill_at, kill_at > 0 ? kill_at : 1);
	poke(g);
}

int
guard_acted(struct guard *g)
{
	return g->sh != NULL ? atomic_load(&g->sh->acted) : 0;
}

void
guard_done(struct guard *g)
{
	if (g->sh == NULL)
		return;
	atomic_store(&g->sh->done, 1);
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
}

/*
 * Reap it if it has gone.  One that is still on its way out (it has seen
 * end of file and exits) is not waited for: when rlock exits first, init
 * reaps it, a few hundred microseconds of rlock's exit saved on a slow
 * machine.
 */
void
guard_reap(struct guard *g)
{
	if (g->pid > 0)
		waitpid(g->pid, NULL, WNOHANG);
	if (g->fd >= 0)
		close(g->fd);
	if (g->sh != NULL)
		munmap(g->sh, sizeof *g->sh);
	memset(g, 0, sizeof *g);
	g->fd = -1;
}
