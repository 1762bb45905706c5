/* guard-run.c: what the guard does, once started: watch rlock, the command and the validity, and act. */
#include "config.h"

/*
 * The guard's side of guard.c's contract (see the top of guard.c): its
 * loop, how it tells that the command is over or rlock is gone, what it
 * sends the command's group, and its start as a program of its own
 * (guard_exec_main).  A change to when the guard acts, or to what it
 * does then, goes here; to how it is started or told, in guard.c; to how
 * it gives the lock back, in guard-release.c.  Only async-signal-safe
 * calls, made through guard-private.h's G_* while rlock may be alive.
 */

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "guard-private.h"
#include "util.h"

/* How long a dead rlock's command may take to go before the release. */
#define GONE_MAX_MS	3000

/* Close every descriptor from first on. */
void
guard_close_from(int first)
{
	long	max, fd;

	if (G_CLOSE_RANGE(first) == 0)
		return;
	if ((max = sysconf(_SC_OPEN_MAX)) < 0 || max > 65536)
		max = 65536;
	for (fd = first; fd < max; fd++)
		G_CLOSE((int)fd);
}

/*
 * The state, process group and start time of pid, from /proc/PID/stat,
 * with nothing but system calls and arithmetic: 0, or -1 if it has gone.
 */
static int
stat_of(pid_t pid, char *state, pid_t *pgrp, uint64_t *start)
{
	char		path[32], buf[1024], *p, *q = NULL;
	uint64_t	v;
	ssize_t		n;
	int		fd, field, i = (int)sizeof path - 1;

	/* "/proc/" PID "/stat", the digits written backwards. */
	path[i] = '\0';
	memcpy(path + (i -= 5), "/stat", 5);
	do
		path[--i] = (char)('0' + pid % 10);
	while ((pid /= 10) > 0 && i > 6);
	memcpy(path + (i -= 6), "/proc/", 6);
	if ((fd = (int)G_OPEN(path + i, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = G_READ(fd, buf, sizeof buf - 1);
	G_CLOSE(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (p = buf; *p != '\0'; p++)
		if (*p == ')')
			q = p;
	if (q == NULL || q[1] != ' ' || q[2] == '\0')
		return -1;
	*state = q[2];
	/* Field 3 is the state; the start time is field 22. */
	for (p = q + 3, field = 4; field <= 22; field++) {
		while (*p == ' ')
			p++;
		if (*p == '-')
			p++;
		for (v = 0; *p >= '0' && *p <= '9'; p++)
			v = v * 10 + (uint64_t)(*p - '0');
		if (field == 5)
			*pgrp = (pid_t)v;
		else if (field == 22)
			*start = v;
	}
	return 0;
}

/* Is the escaped process e still there (alive, and still itself)? */
static int
escaped_alive(struct escaped *e)
{
	uint64_t	start = 0;
	pid_t		pid = atomic_load(&e->pid), pgrp;
	char		state;

	if (pid <= 0 || stat_of(pid, &state, &pgrp, &start) == -1)
		return 0;
	return start == atomic_load(&e->start) && state != 'Z' &&
	    state != 'X';
}

/* SIGKILL to what rlock last saw outside the group; how many are left. */
static int
kill_escaped(struct guard_shared *sh)
{
	int	i, n = atomic_load(&sh->nescaped), left = 0;

	if (n > ESCAPED_MAX)
		n = ESCAPED_MAX;
	for (i = 0; i < n; i++)
		if (escaped_alive(&sh->escaped[i])) {
			kill(atomic_load(&sh->escaped[i].pid), SIGKILL);
			left++;
		}
	return left;
}

/*
 * Is a process of group pg still alive, but the guards (which join it)?
 * A zombie is not: it runs no more, and its new parent (init, or whatever
 * subreaper is above rlock) may take its time to reap it -- a second and
 * more, measured, under a container's init.  So /proc is read, with
 * getdents64 (opendir would allocate), and system calls alone: the shared
 * guard asks while rlock lives (see raw()).  1 when it cannot tell.
 */
static int
group_alive(struct guard_shared *sh, pid_t pg)
{
	struct dirent64_head {
		uint64_t	ino;
		int64_t		off;
		unsigned short	reclen;
		unsigned char	type;
		char		name[];
	}		*d;
	uint64_t	 buf[512], start;
	long		 n, off;
	pid_t		 pid, pgrp;
	char		 state, *c;
	int		 fd, alive = 0;

	if (G_FAILED_WITH(G_KILL(-pg, 0), ESRCH))
		return 0;
	if ((fd = (int)G_OPEN("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return 1;
	while (!alive && (n = G_GETDENTS(fd, buf, sizeof buf)) > 0)
		for (off = 0; off < n && !alive; off += d->reclen) {
			d = (struct dirent64_head *)((char *)buf + off);
			for (pid = 0, c = d->name; *c >= '0' && *c <= '9'; c++)
				pid = pid * 10 + (*c - '0');
			if (*c != '\0' || pid <= 0 ||
			    pid == atomic_load(&sh->guards[0]) ||
			    pid == atomic_load(&sh->guards[1]))
				continue;
			alive = stat_of(pid, &state, &pgrp, &start) == 0 &&
			    pgrp == pg && state != 'Z' && state != 'X';
		}
	G_CLOSE(fd);
	return n < 0 ? 1 : alive;
}

/* How many of the processes rlock last saw outside the group are left. */
static int
escaped_left(struct guard_shared *sh)
{
	int	i, n = atomic_load(&sh->nescaped), left = 0;

	if (n > ESCAPED_MAX)
		n = ESCAPED_MAX;
	for (i = 0; i < n; i++)
		left += escaped_alive(&sh->escaped[i]);
	return left;
}

/*
 * Is the command over, nothing of it left (its group, but the guards, and
 * what rlock last saw outside it)?  Not before it has started: a command
 * published later must not start at all (guard_command).
 */
static int
command_over(struct guard_shared *sh)
{
	pid_t	pg = atomic_load(&sh->pg);

	return pg > 0 && !group_alive(sh, pg) && escaped_left(sh) == 0;
}

/*
 * sig to the command's group, in rlock's place: said first, then the group
 * looked up, so that a command's child publishing its group at the same
 * time either is signalled or sees acted and does not exec (guard_command).
 * The group, or 0 if there is no command yet.
 */
static pid_t
act(struct guard_shared *sh, int sig)
{
	pid_t	pg;

	int	none = 0;

	/*
	 * The first signal is the one: the shared guard and its successor
	 * may both find the validity over while they overlap, and the
	 * command must get the loss signal once.  SIGKILL may come again.
	 */
	if (!atomic_compare_exchange_strong(&sh->acted, &none, sig) &&
	    sig != SIGKILL)
		return atomic_load(&sh->pg);
	if ((pg = atomic_load(&sh->pg)) > 0)
		G_KILL(-pg, sig);
	return pg;
}

/*
 * rlock has died: kill what is left of the command, then give the lock
 * back once none of it is (see the top of the file).  With no command
 * yet (rlock died before it published one), there is nothing to kill.
 */
static void __attribute__((noreturn))
rlock_died(struct guard_shared *sh, char *const *envp)
{
	static char	name[] = "rlock-guard", arg[] = GUARD_RELEASE_ARG;
	char		*argv[] = { name, arg, NULL };
	struct timespec	ts = { 0, 5 * 1000000 };
	int64_t		until;
	pid_t		pg;
	int		fd;

	/* Out of the group first, so that the kill does not end the guard. */
	setpgid(0, 0);
	pg = act(sh, SIGKILL);
	kill_escaped(sh);
	if (sh->release_len == 0)
		_exit(0);
	until = now_mono_ms() + GONE_MAX_MS;
	while ((pg > 0 && group_alive(sh, pg)) || kill_escaped(sh) > 0) {
		if (now_mono_ms() >= until)
			_exit(0);
		if (pg > 0)
			kill(-pg, SIGKILL);	/* a fork may have raced it */
		nanosleep(&ts, NULL);
	}
	/* The release's standard descriptors: /dev/null, not rlock's pipe. */
	close(0);
	if ((fd = open("/dev/null", O_RDWR)) == 0) {
		dup2(0, 1);
		dup2(0, 2);
	}
	/* The release (guard-release.c) reads the lock from GUARD_FD_SHARED. */
	fcntl(GUARD_FD_EXE, F_SETFD, FD_CLOEXEC);
	fexecve(GUARD_FD_EXE, argv, envp);
	_exit(0);
}

/* The earlier of two times, -1 meaning none. */
static int64_t
earlier_of(int64_t a, int64_t b)
{
	if (a < 0)
		return b;
	return b >= 0 && b < a ? b : a;
}

static void __attribute__((noreturn))
kill_group(struct guard_shared *sh)
{
	act(sh, SIGKILL);	/* the guard is in the group: this ends it */
	_exit(0);
}

/*
 * The guard's loop (guard-private.h).  Only async-signal-safe calls: see
 * the top of guard.c.
 */
void
guard_main(struct guard_shared *sh, char *const *envp, int shared)
{
	int64_t		now, wake, valid, k, kill_at = -1;
	int		timeout, signalled = 0;
	pid_t		joined = 0, pg;
	char		buf[64];
	ssize_t		n;

	/*
	 * rlock may have died before there was a pipe to report it; or it
	 * may have run its whole course (a quick command, released) and
	 * exited before the guard got here: then it said so first.
	 */
	if (atomic_load(&sh->done))
		_exit(0);
	if (G_GETPPID() != sh->parent)
		rlock_died(sh, envp);
	/* Before it joins the group: no look at the group counts it. */
	atomic_store(&sh->guards[shared ? 0 : 1], G_GETPID());
	for (;;) {
		if (atomic_load(&sh->done))
			_exit(0);
		if (shared && atomic_load(&sh->successor_in)) {
			/* Its pid may be anybody's once it has gone. */
			atomic_store(&sh->guards[0], 0);
			_exit(0);
		}
		/* Into the command's group as soon as there is one. */
		if (joined == 0 && (pg = atomic_load(&sh->pg)) > 0) {
			if (G_SETPGID(0, pg) == 0 && !shared)
				atomic_store(&sh->successor_in, 1);
			joined = pg;
		}
		now = now_mono_ms();
		valid = atomic_load(&sh->valid_until) + sh->margin_ms;
		if ((k = atomic_load(&sh->kill_at)) > 0 && !signalled) {
			/* rlock signalled the loss itself: back up its SIGKILL. */
			signalled = 1;
			kill_at = k + sh->margin_ms;
		}
		if (!signalled && now >= valid && command_over(sh)) {
			/*
			 * Nothing of the command is left: it ended while the
			 * lock was rlock's (the margin ends before the key can
			 * expire), its outcome is its own, and there is
			 * nothing to stop.  rlock, when it runs again, finds
			 * this (guard_found_over) and reports no loss.
			 */
			atomic_store(&sh->gone, 1);
			signalled = 1;
		} else if (!signalled && now >= valid) {
			if (atomic_load(&sh->suspended) || sh->on_lost == SIGKILL)
				kill_group(sh);
			signalled = 1;
			if (sh->on_lost != 0) {
				act(sh, sh->on_lost);
				kill_at = now + sh->kill_after_ms;
			}
		}
		if (kill_at >= 0 && now >= kill_at)
			kill_group(sh);
		wake = !signalled ? valid : kill_at;
		if (shared && atomic_load(&sh->retired))
			wake = earlier_of(wake, now + 2);
		if (wake < 0)
			timeout = -1;
		else if (wake - now > 3600000)
			timeout = 3600000;
		else
			timeout = (int)(wake - now);
		if (g_poll_in(0, timeout) <= 0)
			continue;
		n = G_READ(0, buf, sizeof buf);
		if (n == 0) {
			/*
			 * rlock is gone; unless it said so first, it died.
			 * A retired guard leaves that to its successor.
			 */
			if (atomic_load(&sh->done) || (shared &&
			    atomic_load(&sh->retired)))
				_exit(0);
			rlock_died(sh, envp);
		}
		/* Anything else is a wake-up: look at the shared state again. */
	}
}

int
guard_exec_main(void)
{
	extern char		**environ;
	struct guard_shared	 *sh;
	struct stat		  st;

#ifdef HAVE_PRCTL
	prctl(PR_SET_NAME, "rlock-guard");
	/* Not readable through /proc by the command: it holds rel's. */
	prctl(PR_SET_DUMPABLE, 0);
#endif
	if (fstat(GUARD_FD_SHARED, &st) == -1 ||
	    st.st_size < (off_t)sizeof *sh || st.st_size > 1 << 20)
		return EXIT_USAGE;
	/* Left open: the release maps it too (rlock_died). */
	sh = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
	    MAP_SHARED, GUARD_FD_SHARED, 0);
	if (sh == MAP_FAILED || sh->magic != GUARD_MAGIC ||
	    sh->size != (uint32_t)st.st_size)
		return EXIT_USAGE;
	guard_main(sh, environ, 0);
}
