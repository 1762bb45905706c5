/* guard-private.h: what rlock's side of the guard (guard.c) and the guard itself (guard-run.c) share. */
#ifndef RLOCK_GUARD_PRIVATE_H
#define RLOCK_GUARD_PRIVATE_H

/*
 * The memory both sides map (struct guard_shared), and the system calls
 * the guard makes while it may share rlock's memory (raw(), the G_*
 * macros): async-signal-safe, and without libc's errno.  Included after
 * config.h.
 */

#include <sys/syscall.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

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

static inline long
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
static inline long
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

static inline long
g_poll_in(int fd, int timeout_ms)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, timeout_ms);
}
#endif

/* Processes outside the group that the guard can be told of. */
#define ESCAPED_MAX	64
/* The shared memory's first word: it is what guard_start made. */
#define GUARD_MAGIC	0x726c6b67u
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
	/*
	 * Set when the guard is told of the lock (guard_arm), before
	 * valid_until comes down from GUARD_UNARMED: a guard spawned while
	 * rlock waits may be reading them.
	 */
	_Atomic int64_t	margin_ms;
	_Atomic int64_t	kill_after_ms;
	_Atomic int	on_lost;
	/* Read by the release alone, once rlock is gone. */
	int		release_syslog;	/* guard_release's syslog */
	uint32_t	release_len;	/* of the held lock's pack; 0: none */
	char		release[];	/* held_pack's (guard-release.c) */
};

/*
 * valid_until of a guard that guards no lock yet (guard_spawn): never
 * reached, and far from overflowing with a margin added.
 */
#define GUARD_UNARMED	(INT64_MAX / 4)
/* The room for the held lock's pack in a guard spawned before the lock. */
#define GUARD_RELEASE_ROOM	(64 * 1024)

/*
 * The guard's loop (guard-run.c): envp is the release's, if the shared
 * memory holds one (release_len); shared: the shared guard, which goes
 * once its successor is in the command's group (guard_promote).
 */
void	guard_main(struct guard_shared *, char *const *envp, int shared)
	    __attribute__((noreturn));
/* Close every descriptor from first on (system calls only). */
void	guard_close_from(int first);

#endif
