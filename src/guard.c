/* guard.c: the process that keeps the command from outliving rlock's lock. */
#include "config.h"

/*
 * PR_SET_PDEATHSIG reaches the command's direct child only: what the
 * command starts (`sh -c 'step1; step2'`, `daemon &`) is reparented to
 * init when rlock is SIGKILLed and runs on after the lock expired.  And a
 * stopped rlock (SIGSTOP, a debugger, a frozen cgroup or VM) extends
 * nothing, so the lock expires under a command that keeps running.  The
 * guard covers both, from the command's first instruction: it is started
 * before the command's exec, and the command's child publishes its process
 * group to it before it execs (guard_command).
 *
 *  - it reads the read end of a pipe whose only write end is rlock's: end
 *    of file without guard_done means rlock is gone, and the guard
 *    kills the group;
 *  - it joins the command's process group, so the group exists (and its
 *    id stays unused by anyone else) for as long as the guard lives, and
 *    signals to the group reach everything the command started even after
 *    the command itself has exited;
 *  - it sleeps until the lock's validity ends (plus a margin that leaves
 *    rlock time to act first), reading the validity rlock last confirmed
 *    from shared memory, and does what rlock would have done if rlock has
 *    not done it: the loss signal to the group, then SIGKILL;
 *  - when rlock has died, it kills the group and the processes rlock last
 *    saw outside it (shared memory too), leaves the group first so that
 *    the kill does not end it, waits until none of them is left, and
 *    gives the lock back with rlock's token: it execs rlock's own binary,
 *    opened before the guard started, as `rlock release`, with rlock's
 *    settings read from a pipe.  The next holder starts at once instead of
 *    at the TTL, which still bounds it if the server cannot be reached
 *    then, or if something of the command lingers past GONE_MAX_MS.
 *
 * What it costs rlock: where it can, a clone that shares rlock's memory
 * (the shared guard, below), as cheap as a thread: 0.07 ms against 12 ms
 * for a vfork and exec of rlock's binary, on a busy 2-core virtual machine
 * where a process's start and end are dear.  Elsewhere (AddressSanitizer
 * builds, other architectures, under valgrind, a kernel or emulator that
 * refuses the clone) the guard is rlock's own binary again
 * (guard_exec_main), run as `rlock-guard`, its state in a memfd that both
 * map: vfork copies nothing and rlock waits only until the guard's exec
 * has replaced its memory.  If the exec fails too, the guard is forked
 * (fork_guard), and runs the same guard_main.
 *
 * The guard blocks every signal, so what rlock or a terminal sends to the
 * group (Ctrl-C, Ctrl-Z, the loss signal) does not touch it; only SIGKILL
 * does, which ends the group anyway.  guard_main runs only
 * async-signal-safe system calls, which a forked guard needs (rlock's
 * heartbeat thread may be running when it forks), and it closes every
 * descriptor it inherited, so that no pipe rlock's caller reads stays open
 * in it.
 */

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

/*
 * The shared guard (clone_guard): where the kernel and the build allow it,
 * the guard is not a new program but a clone of rlock that shares its
 * memory (CLONE_VM, without CLONE_THREAD: a process of its own, which a
 * SIGKILL or SIGSTOP of rlock does not reach).  It costs what a thread
 * costs, where an exec costs a whole process's start and end, which on a
 * virtual machine is most of an `exec -- true` cycle.  It runs on its own
 * stack, and on rlock's thread pointer: a libc call failing there would
 * write errno under rlock's main thread.  So while rlock lives, the guard
 * makes its system calls itself (raw(): they return -errno); once rlock is
 * gone (rlock_died), libc is its own again.  AddressSanitizer keeps
 * per-thread state that a clone would share: its builds exec the guard.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__)) && \
    !defined(SANITIZED) && defined(SYS_ppoll) && defined(SYS_dup3)
#define SHARED_GUARD 1
#include <sched.h>

static long
raw(long n, long a, long b, long c, long d, long e)
{
#if defined(__x86_64__)
	register long	r10 __asm__("r10") = d, r8 __asm__("r8") = e;
	long		ret;

	__asm__ volatile ("syscall" : "=a" (ret) : "a" (n), "D" (a), "S" (b),
	    "d" (c), "r" (r10), "r" (r8) : "rcx", "r11", "memory");
	return ret;
#else
	register long	x8 __asm__("x8") = n, x0 __asm__("x0") = a;
	register long	x1 __asm__("x1") = b, x2 __asm__("x2") = c;
	register long	x3 __asm__("x3") = d, x4 __asm__("x4") = e;

	__asm__ volatile ("svc 0" : "+r" (x0) : "r" (x8), "r" (x1), "r" (x2),
	    "r" (x3), "r" (x4) : "memory", "cc");
	return x0;
#endif
}
#define G_CLOSE(fd)		raw(SYS_close, (fd), 0, 0, 0, 0)
#define G_DUP2(a, b)		raw(SYS_dup3, (a), (b), 0, 0, 0)
#define G_DUPFD(fd, min)	raw(SYS_fcntl, (fd), F_DUPFD_CLOEXEC, (min), 0, 0)
#define G_GETPPID()		((pid_t)raw(SYS_getppid, 0, 0, 0, 0, 0))
#define G_SETPGID(p, g)		raw(SYS_setpgid, (p), (g), 0, 0, 0)
#define G_KILL(p, s)		raw(SYS_kill, (p), (s), 0, 0, 0)
#define G_READ(fd, b, n)	raw(SYS_read, (fd), (long)(b), (long)(n), 0, 0)
#define G_OPEN(path, fl)	raw(SYS_openat, AT_FDCWD, (long)(path), (fl), \
				    0, 0)
#define G_GETDENTS(fd, b, n)	raw(SYS_getdents64, (fd), (long)(b), \
				    (long)(n), 0, 0)
#define G_GETPID()		((pid_t)raw(SYS_getpid, 0, 0, 0, 0, 0))
/* A call's failure with error E: raw() returns -E. */
#define G_FAILED_WITH(r, e)	((r) == -(e))
#ifdef SYS_close_range
#define G_CLOSE_RANGE(a)	raw(SYS_close_range, (a), ~0U, 0, 0, 0)
#else
#define G_CLOSE_RANGE(a)	(-ENOSYS)
#endif

/* poll(2) of one descriptor for reading, timeout_ms < 0: none. */
static long
g_poll_in(int fd, int timeout_ms)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };
	struct timespec	ts;

	ts.tv_sec = timeout_ms / 1000;
	ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000;
	return raw(SYS_ppoll, (long)&pfd, 1, timeout_ms < 0 ? 0 : (long)&ts,
	    0, 8);
}
#else
#define G_CLOSE(fd)		close(fd)
#define G_DUP2(a, b)		dup2((a), (b))
#define G_DUPFD(fd, min)	fcntl((fd), F_DUPFD_CLOEXEC, (min))
#define G_GETPPID()		getppid()
#define G_SETPGID(p, g)		setpgid((p), (g))
#define G_KILL(p, s)		kill((p), (s))
#define G_READ(fd, b, n)	read((fd), (b), (n))
#define G_OPEN(path, fl)	open((path), (fl))
#define G_GETDENTS(fd, b, n)	syscall(SYS_getdents64, (fd), (b), (n))
#define G_GETPID()		getpid()
#define G_FAILED_WITH(r, e)	((r) == -1 && errno == (e))
#ifdef HAVE_CLOSE_RANGE
#define G_CLOSE_RANGE(a)	close_range((unsigned)(a), ~0U, 0)
#else
#define G_CLOSE_RANGE(a)	(-1)
#endif

static long
g_poll_in(int fd, int timeout_ms)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, timeout_ms);
}
#endif

/* Processes outside the group that the guard can be told of. */
#define ESCAPED_MAX	64
/* How long a dead rlock's command may take to go before the release. */
#define GONE_MAX_MS	3000
/* What the history says of that release. */
#define KILLED_REASON	"rlock was killed"
/* The shared memory's first word: it is what guard_start made. */
#define GUARD_MAGIC	0x726c6b67u
/* The release's words at most (guard_release_init makes about 16). */
#define RELEASE_ARGS_MAX	64

struct escaped {
	_Atomic pid_t		pid;
	_Atomic uint64_t	start;
};

struct guard_shared {
	uint32_t	magic;
	uint32_t	size;		/* of the whole mapping */
	_Atomic int64_t	valid_until;	/* CLOCK_MONOTONIC ms */
	_Atomic int64_t	kill_at;	/* 0: rlock has sent no loss signal */
	_Atomic pid_t	pg;		/* the command's group; 0: none yet */
	_Atomic int	suspended;
	_Atomic int	done;
	_Atomic int	acted;		/* the signal the guard sent, if any */
	/*
	 * The command was over (nothing of it left) when the validity
	 * ended: the guard did not act, and the lock was rlock's to its end.
	 */
	_Atomic int	gone;
	/* Each guard's pid, written by itself: [0] the shared, [1] its own. */
	_Atomic pid_t	guards[2];
	_Atomic int	retired;	/* the shared guard's successor started */
	_Atomic int	successor_in;	/* ... and is in the command's group */
	_Atomic int	nescaped;
	struct escaped	escaped[ESCAPED_MAX];
	/* Set once, before the guard starts. */
	pid_t		parent;		/* rlock */
	int64_t		margin_ms;
	int64_t		kill_after_ms;
	int		on_lost;
	int		nargs;		/* the release's words in text; 0: none */
	char		text[];		/* each ends with a NUL */
};

/* Close every descriptor from first on. */
static void
close_from(int first)
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
rlock_died(struct guard_shared *sh, char *const *argv, char *const *envp)
{
	struct timespec	ts = { 0, 5 * 1000000 };
	int64_t		until;
	pid_t		pg;
	int		fd;

	/* Out of the group first, so that the kill does not end the guard. */
	setpgid(0, 0);
	pg = act(sh, SIGKILL);
	kill_escaped(sh);
	if (argv == NULL)
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
 * The guard's loop: argv and envp are the release's (argv NULL: no
 * release); shared: the shared guard, which goes once its successor is in
 * the command's group (guard_promote).  Only async-signal-safe calls: see
 * the top of the file.
 */
static void __attribute__((noreturn))
guard_main(struct guard_shared *sh, char *const *argv, char *const *envp,
    int shared)
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
		rlock_died(sh, argv, envp);
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
			rlock_died(sh, argv, envp);
		}
		/* Anything else is a wake-up: look at the shared state again. */
	}
}

/*
 * In the guard: the pipe from rlock as 0, rlock's binary as 3, rel's
 * descriptors as 4, 5 and 6, the shared memory as 7 (shm >= 0), nothing
 * else (no pipe rlock's caller reads stays open in it).
 */
static void
arrange_fds(int pipe_fd, int exe, int shm, const struct guard_release *rel)
{
	int	fds[5] = { -1, -1, -1, -1, -1 }, i;

	/* Out of the way of 0 and of 3-7 first, whatever they were. */
	if (exe >= 0)
		fds[0] = (int)G_DUPFD(exe, 16);
	if (rel != NULL) {
		fds[1] = (int)G_DUPFD(rel->config, 16);
		if (rel->password >= 0)
			fds[2] = (int)G_DUPFD(rel->password, 16);
		if (rel->sentinel_password >= 0)
			fds[3] = (int)G_DUPFD(rel->sentinel_password, 16);
	}
	if (shm >= 0)
		fds[4] = (int)G_DUPFD(shm, 16);
	if (pipe_fd != 0) {
		G_DUP2(pipe_fd, 0);
		G_CLOSE(pipe_fd);
	}
	for (i = 0; i < 5; i++)
		if (fds[i] >= 0)
			G_DUP2(fds[i], GUARD_FD_EXE + i); /* not close-on-exec */
		else
			G_CLOSE(GUARD_FD_EXE + i);
	G_CLOSE(1);
	G_CLOSE(2);
	close_from(GUARD_FD_SHARED + 1);
}

/*
 * The vfork'ed child that becomes the guard: on rlock's memory and stack
 * until the exec, so system calls only, and err to say why the exec
 * failed.  Every signal is blocked already (and stays so in the guard).
 */
static void __attribute__((noreturn))
exec_guard(int pipe_fd, int exe, int shm, const struct guard_release *rel,
    char *const *envp, volatile int *err)
{
	static char	 name[] = "rlock-guard", arg[] = GUARD_ARG;
	char		*argv[] = { name, arg, NULL };

	arrange_fds(pipe_fd, exe, shm, rel);
	fexecve(GUARD_FD_EXE, argv, envp);
	*err = errno;
	_exit(127);
}

/*
 * vfork and exec the guard: its pid, or -1 (errno set) if that failed;
 * nothing here is changed after the vfork, so nothing is clobbered.
 */
static pid_t
vfork_guard(int pipe_fd, int exe, int shm, const struct guard_release *rel,
    char *const *envp)
{
	volatile int	err = 0;
	pid_t		pid;

	if ((pid = vfork()) == 0)
		exec_guard(pipe_fd, exe, shm, rel, envp, &err);
	if (pid > 0 && err != 0) {
		waitpid(pid, NULL, 0);
		errno = err;
		return -1;
	}
	return pid;
}

/* The guard as a fork of rlock, when it could not be exec'ed. */
static pid_t
fork_guard(struct guard_shared *sh, int pipe_fd, int exe,
    const struct guard_release *rel)
{
	pid_t	pid;

	if ((pid = _Fork()) != 0)
		return pid;
	arrange_fds(pipe_fd, exe, -1, rel);
#ifdef HAVE_PRCTL
	prctl(PR_SET_NAME, "rlock-guard");
	/* Not readable through /proc by the command: it holds rel's. */
	prctl(PR_SET_DUMPABLE, 0);
#endif
	guard_main(sh, rel != NULL ? rel->argv : NULL,
	    rel != NULL ? rel->envp : NULL, 0);
}

#ifdef SHARED_GUARD
/* The shared guard's stack, its lowest page left unmapped. */
#define SHARED_STACK	(256 * 1024)

/* What the shared guard starts from, at the top of its own stack. */
struct clone_start {
	struct guard_shared	*sh;
	struct guard_release	 rel;
	int			 has_rel, pipe_fd, exe;
};

static int
clone_main(void *p)
{
	struct clone_start	*cs = p;

	arrange_fds(cs->pipe_fd, cs->exe, -1, cs->has_rel ? &cs->rel : NULL);
	raw(SYS_prctl, PR_SET_NAME, (long)"rlock-guard", 0, 0, 0);
	/*
	 * Not PR_SET_DUMPABLE, which is the memory's (so rlock's too): the
	 * release's pipes are no more exposed here than in rlock.
	 */
	guard_main(cs->sh, cs->has_rel ? cs->rel.argv : NULL,
	    cs->has_rel ? cs->rel.envp : NULL, 1);
}

/*
 * The guard as a clone sharing rlock's memory (see the top of the file):
 * its pid, or -1.  Its stack goes into g; it is left to rlock's exit
 * (guard_reap).
 */
static pid_t
clone_guard(struct guard *g, struct guard_shared *sh, int pipe_fd, int exe,
    const struct guard_release *rel)
{
	struct clone_start	*cs;
	const char		*pre = getenv("LD_PRELOAD");
	long			 page = sysconf(_SC_PAGESIZE);
	char			*stack;
	pid_t			 pid;

	/* Valgrind runs no clone but a thread's or a fork's: it would end. */
	if (pre != NULL && strstr(pre, "vgpreload") != NULL)
		return -1;
	if (page <= 0 || page > SHARED_STACK / 4)
		return -1;
	stack = mmap(NULL, SHARED_STACK, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	(void)mprotect(stack, (size_t)page, PROT_NONE);
	cs = (struct clone_start *)(void *)(stack + SHARED_STACK) - 1;
	memset(cs, 0, sizeof *cs);
	cs->sh = sh;
	cs->has_rel = rel != NULL;
	if (rel != NULL)
		cs->rel = *rel;
	cs->pipe_fd = pipe_fd;
	cs->exe = exe;
	pid = clone(clone_main,
	    (void *)((uintptr_t)cs & ~(uintptr_t)63), CLONE_VM | SIGCHLD, cs);
	if (pid == -1) {
		munmap(stack, SHARED_STACK);
		return -1;
	}
	g->stack = stack;
	return pid;
}
#endif

/* The shared memory for the guard, the release's words in it. */
static struct guard_shared *
shared_new(const struct guard_release *rel, int *shm)
{
	struct guard_shared	*sh;
	size_t			 size = sizeof *sh, len;
	char			*t;
	int			 i, n = 0;

	if (rel != NULL)
		for (n = 0; rel->argv[n] != NULL && n < RELEASE_ARGS_MAX; n++)
			size += strlen(rel->argv[n]) + 1;
	if ((*shm = memfd_create("rlock-guard", MFD_CLOEXEC)) == -1)
		return NULL;
	if (ftruncate(*shm, (off_t)size) == -1 || (sh = mmap(NULL, size,
	    PROT_READ | PROT_WRITE, MAP_SHARED, *shm, 0)) == MAP_FAILED) {
		close(*shm);
		return NULL;
	}
	sh->magic = GUARD_MAGIC;
	sh->size = (uint32_t)size;
	sh->parent = getpid();
	sh->nargs = n;
	for (i = 0, t = sh->text; i < n; i++, t += len + 1) {
		len = strlen(rel->argv[i]);
		memcpy(t, rel->argv[i], len + 1);
	}
	return sh;
}

int
guard_start(struct guard *g, int64_t valid_until, int64_t margin_ms,
    int on_lost, int64_t kill_after_ms, const struct guard_release *rel,
    struct err *e)
{
	static char *const	 none[] = { NULL };
	struct guard_shared	*sh;
	sigset_t		 all, old;
	pid_t			 pid = -1;
	int			 p[2], shm, exe, own_exe = -1;

	memset(g, 0, sizeof *g);
	g->fd = -1;
	if (rel != NULL && (rel->exe < 0 || rel->config < 0))
		rel = NULL;
	if ((sh = shared_new(rel, &shm)) == NULL) {
		err_set(e, ERR_SOFTWARE, "the guard's memory: %s",
		    strerror(errno));
		return -1;
	}
	atomic_init(&sh->valid_until, valid_until);
	sh->margin_ms = margin_ms;
	sh->kill_after_ms = kill_after_ms;
	sh->on_lost = on_lost;
	if ((exe = rel != NULL ? rel->exe : -1) == -1)
		exe = own_exe = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1) {
		err_set(e, ERR_SOFTWARE, "pipe: %s", strerror(errno));
		goto fail;
	}
	/* Blocked before the child starts: no signal finds it half set up. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
#ifdef SHARED_GUARD
	pid = clone_guard(g, sh, p[0], exe, rel);
#endif
	if (pid == -1 && exe >= 0)
		pid = vfork_guard(p[0], exe, shm, rel, rel != NULL ? rel->envp :
		    none);
	if (pid == -1)
		pid = fork_guard(sh, p[0], exe, rel);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(p[0]);
	if (pid == -1) {
		err_set(e, ERR_SOFTWARE, "fork: %s", strerror(errno));
		close(p[1]);
		goto fail;
	}
	/* Kept for a successor (guard_promote) or a replacement. */
	g->shm = shm;
	g->exe = exe;
	g->own_exe = own_exe >= 0;
	g->rel = rel;
	g->shared_fd = -1;
	g->pid = pid;
	g->fd = p[1];
	/* The heartbeat thread may look for it (guard_valid) from now on. */
	__atomic_store_n(&g->sh, sh, __ATOMIC_RELEASE);
	return 0;
fail:
	close(shm);
	if (own_exe >= 0)
		close(own_exe);
	munmap(sh, sh->size);
	return -1;
}

/*
 * A command that runs on gets a guard that is a program of its own (see
 * the top of the file): the shared guard's successor is exec'ed, and the
 * shared guard goes once the successor is in the command's group.  0, or
 * -1 if the successor could not start (the shared guard stays).
 */
static void	poke(struct guard *);

int
guard_promote(struct guard *g)
{
	static char *const	 none[] = { NULL };
	sigset_t		 all, old;
	pid_t			 pid;
	int			 p[2];

	if (g->stack == NULL || g->shared_fd != -1 || g->replaced ||
	    g->sh == NULL || atomic_load(&g->sh->acted) != 0 ||
	    atomic_load(&g->sh->done))
		return 0;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1)
		return -1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = vfork_guard(p[0], g->exe, g->shm, g->rel, g->rel != NULL ?
	    g->rel->envp : none);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(p[0]);
	if (pid == -1) {
		close(p[1]);
		return -1;
	}
	atomic_store(&g->sh->retired, 1);
	poke(g);
	g->shared_fd = g->fd;
	g->shared_pid = g->pid;
	g->fd = p[1];
	g->pid = pid;
	return 0;
}

int
guard_replace(struct guard *g)
{
	static char *const	 none[] = { NULL };
	sigset_t		 all, old;
	pid_t			 pid, dead = g->pid;
	int			 p[2];

	if (g->sh == NULL || atomic_load(&g->sh->done) || g->shm < 0)
		return 0;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1)
		return -1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = g->exe >= 0 ? vfork_guard(p[0], g->exe, g->shm, g->rel,
	    g->rel != NULL ? g->rel->envp : none) : -1;
	if (pid == -1)
		pid = fork_guard(g->sh, p[0], g->exe, g->rel);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(p[0]);
	if (pid == -1) {
		close(p[1]);
		return -1;
	}
	/* Its pid is no guard's now: it may be anybody's later. */
	if (atomic_load(&g->sh->guards[0]) == dead)
		atomic_store(&g->sh->guards[0], 0);
	if (g->fd >= 0)
		close(g->fd);
	g->fd = p[1];
	g->pid = pid;
	/* A program of its own already: no successor to start. */
	g->replaced = 1;
	guard_wake(g);
	return 0;
}

int
guard_found_over(const struct guard *g)
{
	return g->sh != NULL ? atomic_load(&g->sh->gone) : 0;
}

size_t
guard_pids(const struct guard *g, pid_t pids[2])
{
	size_t	n = 0;

	if (g->pid > 0)
		pids[n++] = g->pid;
	if (g->stack != NULL && g->shared_pid > 0)
		pids[n++] = g->shared_pid;
	return n;
}

/* The release's words from the shared memory, into argv: how many. */
static int
release_words(const struct guard_shared *sh, char **argv)
{
	const char	*t = sh->text, *end = (const char *)sh + sh->size;
	int		 i;

	for (i = 0; i < sh->nargs && i < RELEASE_ARGS_MAX; i++) {
		argv[i] = (char *)t;
		t = memchr(t, '\0', (size_t)(end - t));
		if (t == NULL)
			return 0;
		t++;
	}
	argv[i] = NULL;
	return i;
}

int
guard_exec_main(void)
{
	extern char		**environ;
	static char		 *argv[RELEASE_ARGS_MAX + 1];
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
	sh = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
	    MAP_SHARED, GUARD_FD_SHARED, 0);
	close(GUARD_FD_SHARED);
	if (sh == MAP_FAILED || sh->magic != GUARD_MAGIC ||
	    sh->size != (uint32_t)st.st_size)
		return EXIT_USAGE;
	guard_main(sh, release_words(sh, argv) > 0 ? argv : NULL, environ, 0);
}

int
guard_command(const struct guard *g, pid_t pg)
{
	if (g->sh == NULL)
		return 0;
	atomic_store(&g->sh->pg, pg);
	return atomic_load(&g->sh->acted) != 0 ? -1 : 0;
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
guard_wake(struct guard *g)
{
	pid_t	pg;

	/*
	 * A shared guard has not exec'ed: rlock, its parent, can put it in
	 * the command's group itself, and leave it asleep.
	 */
	if (g->stack != NULL && g->shared_pid == 0 && g->sh != NULL &&
	    (pg = atomic_load(&g->sh->pg)) > 0 && setpgid(g->pid, pg) == 0)
		return;
	poke(g);
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
	/* What was kept for a successor, and a retired guard's pipe. */
	if (g->shared_fd >= 0)
		close(g->shared_fd);
	if (g->shm >= 0)
		close(g->shm);
	if (g->own_exe)
		close(g->exe);
	g->shared_fd = g->shm = g->exe = -2;
	g->own_exe = 0;
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
	guard_done(g);
	if (g->pid > 0)
		waitpid(g->pid, NULL, WNOHANG);
	if (g->stack != NULL && g->shared_pid > 0)
		waitpid(g->shared_pid, NULL, WNOHANG);
	/*
	 * A shared guard's memory and stack are left to rlock's exit, which
	 * comes next: the guard may still be on its way out, and unmapping
	 * memory that another processor used costs more than the exit.
	 */
	if (g->sh != NULL && g->stack == NULL)
		munmap(g->sh, g->sh->size);
	memset(g, 0, sizeof *g);
	g->fd = -1;
}

void
guard_escaped(struct guard *g, const struct procs *ps, pid_t pg)
{
	struct guard_shared	*sh = g->sh;
	size_t			 i;
	int			 n = 0;

	if (sh == NULL)
		return;
	for (i = 0; i < ps->n && n < ESCAPED_MAX; i++) {
		if (pg != 0 && ps->p[i].pgrp == pg)
			continue;
		atomic_store(&sh->escaped[n].start, ps->p[i].start);
		atomic_store(&sh->escaped[n].pid, ps->p[i].pid);
		n++;
	}
	atomic_store(&sh->nescaped, n);
}

/* ------------------------------------------------------- the release */

/* A pipe holding text, its write end closed: the read end, or -1. */
static int
text_pipe(const char *text)
{
	size_t	len = strlen(text), done = 0;
	ssize_t	n;
	int	p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1)
		return -1;
	while (done < len) {
		n = write(p[1], text + done, len - done);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Larger than the pipe holds: no release, the TTL. */
			close(p[0]);
			close(p[1]);
			return -1;
		}
		done += (size_t)n;
	}
	close(p[1]);
	return p[0];
}

/* Not for the release: what the pipes say instead, and exec's own. */
static int
dropped(const char *entry)
{
	return strncmp(entry, "RLOCK_", 6) == 0 ||
	    strncmp(entry, "REDISCLI_AUTH=", 14) == 0;
}

int
guard_release_init(struct guard_release *rel, const char *config,
    const char *password, int password_argv, const char *sentinel_password,
    const char *const *extra, const char *name, const char *token)
{
	extern char	**environ;
	char		**p;
	size_t		  n = 0, k = 0;
	char		  cfg[32], pw[32], spw[32], *text, *t2;

	memset(rel, 0, sizeof *rel);
	rel->exe = rel->config = rel->password = rel->sentinel_password = -1;
	snprintf(cfg, sizeof cfg, "/dev/fd/%d", GUARD_FD_CONFIG);
	snprintf(pw, sizeof pw, "/dev/fd/%d", GUARD_FD_PASSWORD);
	snprintf(spw, sizeof spw, "/dev/fd/%d", GUARD_FD_SENTINEL_PASSWORD);
	/* Where exec had it: on the command line, or with the file's rank. */
	if (password != NULL && !password_argv)
		xasprintf(&text, "%spassword-file = %s\n", config, pw);
	else
		text = xstrdup(config);
	/* The sentinels' own, wherever it came from: their pipe. */
	if (sentinel_password != NULL) {
		xasprintf(&t2, "%ssentinel-password-file = %s\n", text, spw);
		explicit_bzero(text, strlen(text));
		free(text);
		text = t2;
	}
	rel->config = text_pipe(text);
	explicit_bzero(text, strlen(text));	/* URLs with passwords */
	free(text);
	if ((rel->exe = open("/proc/self/exe", O_PATH | O_CLOEXEC)) == -1 ||
	    rel->config == -1 ||
	    (password != NULL && (rel->password = text_pipe(password)) == -1) ||
	    (sentinel_password != NULL &&
	    (rel->sentinel_password = text_pipe(sentinel_password)) == -1))
		goto fail;
	for (n = 0; extra != NULL && extra[n] != NULL; n++)
		;
	rel->argv = xcalloc(n + 16, sizeof *rel->argv);
	rel->argv[k++] = xstrdup("rlock");
	rel->argv[k++] = xstrdup("--config");
	rel->argv[k++] = xstrdup(cfg);
	for (n = 0; extra != NULL && extra[n] != NULL; n++)
		rel->argv[k++] = xstrdup(extra[n]);
	if (password != NULL && password_argv) {
		rel->argv[k++] = xstrdup("--password-file");
		rel->argv[k++] = xstrdup(pw);
	}
	rel->argv[k++] = xstrdup("release");
	rel->argv[k++] = xstrdup("--reason");
	rel->argv[k++] = xstrdup(KILLED_REASON);
	rel->argv[k++] = xstrdup("--token");
	rel->argv[k++] = xstrdup(token);
	rel->argv[k++] = xstrdup("--");
	rel->argv[k++] = xstrdup(name);
	for (n = 0, p = environ; *p != NULL; p++)
		n++;
	rel->envp = xcalloc(n + 1, sizeof *rel->envp);
	for (k = 0, p = environ; *p != NULL; p++)
		if (!dropped(*p))
			rel->envp[k++] = xstrdup(*p);
	return 0;
fail:
	guard_release_free(rel);
	return -1;
}

static void
free_vector(char **v)
{
	char	**p;

	if (v == NULL)
		return;
	for (p = v; *p != NULL; p++)
		free(*p);
	free(v);
}

void
guard_release_free(struct guard_release *rel)
{
	if (rel->exe >= 0)
		close(rel->exe);
	if (rel->config >= 0)
		close(rel->config);
	if (rel->password >= 0)
		close(rel->password);
	if (rel->sentinel_password >= 0)
		close(rel->sentinel_password);
	free_vector(rel->argv);
	free_vector(rel->envp);
	memset(rel, 0, sizeof *rel);
	rel->exe = rel->config = rel->password = rel->sentinel_password = -1;
}
