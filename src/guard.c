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
 *    gives the lock back: it execs rlock's own binary, opened before the
 *    guard started, as the release, which gives back the held lock that
 *    rlock packed into the shared memory (its target as settled, its
 *    token: guard-release.c).  The next holder starts at once instead of
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
#include "guard-private.h"
#include "util.h"
/*
 * Three files besides this one, by what a change is about: what the guard
 * does once started (guard-run.c: when it acts, and how), how it gives
 * the lock back (guard-release.c), and what both sides share
 * (guard-private.h: the shared memory, the raw system calls).  Here:
 * starting it (shared, exec'ed or forked), replacing it, and what rlock
 * tells it.
 */

/*
 * In the guard: the pipe from rlock as 0, rlock's binary as 3, the shared
 * memory as 4 (which the release maps: guard-release.c), nothing else (no
 * pipe rlock's caller reads stays open in it).
 */
static void
arrange_fds(int pipe_fd, int exe, int shm)
{
	int	fds[2] = { -1, -1 }, i;

	/* Out of the way of 0 and of 3-4 first, whatever they were. */
	if (exe >= 0)
		fds[0] = (int)G_DUPFD(exe, 16);
	if (shm >= 0)
		fds[1] = (int)G_DUPFD(shm, 16);
	if (pipe_fd != 0) {
		G_DUP2(pipe_fd, 0);
		G_CLOSE(pipe_fd);
	}
	for (i = 0; i < 2; i++)
		if (fds[i] >= 0)
			G_DUP2(fds[i], GUARD_FD_EXE + i); /* not close-on-exec */
		else
			G_CLOSE(GUARD_FD_EXE + i);
	G_CLOSE(1);
	G_CLOSE(2);
	guard_close_from(GUARD_FD_SHARED + 1);
}

/*
 * The vfork'ed child that becomes the guard: on rlock's memory and stack
 * until the exec, so system calls only, and err to say why the exec
 * failed.  Every signal is blocked already (and stays so in the guard).
 */
static void __attribute__((noreturn))
exec_guard(int pipe_fd, int exe, int shm, char *const *envp,
    volatile int *err)
{
	static char	 name[] = "rlock-guard", arg[] = GUARD_ARG;
	char		*argv[] = { name, arg, NULL };

	arrange_fds(pipe_fd, exe, shm);
	fexecve(GUARD_FD_EXE, argv, envp);
	*err = errno;
	_exit(127);
}

/*
 * vfork and exec the guard: its pid, or -1 (errno set) if that failed;
 * nothing here is changed after the vfork, so nothing is clobbered.
 */
static pid_t
vfork_guard(int pipe_fd, int exe, int shm, char *const *envp)
{
	volatile int	err = 0;
	pid_t		pid;

	if ((pid = vfork()) == 0)
		exec_guard(pipe_fd, exe, shm, envp, &err);
	if (pid > 0 && err != 0) {
		waitpid(pid, NULL, 0);
		errno = err;
		return -1;
	}
	return pid;
}

/* The guard as a fork of rlock, when it could not be exec'ed. */
static pid_t
fork_guard(struct guard_shared *sh, int pipe_fd, int exe, int shm,
    char *const *envp)
{
	pid_t	pid;

	if ((pid = _Fork()) != 0)
		return pid;
	arrange_fds(pipe_fd, exe, shm);
#ifdef HAVE_PRCTL
	prctl(PR_SET_NAME, "rlock-guard");
	/* Not readable through /proc by the command: it holds the lock's. */
	prctl(PR_SET_DUMPABLE, 0);
#endif
	guard_main(sh, envp, 0);
}

#ifdef SHARED_GUARD
/* The shared guard's stack, its lowest page left unmapped. */
#define SHARED_STACK	(256 * 1024)

/* What the shared guard starts from, at the top of its own stack. */
struct clone_start {
	struct guard_shared	*sh;
	char *const		*envp;
	int			 pipe_fd, exe, shm;
};

static int
clone_main(void *p)
{
	struct clone_start	*cs = p;

	arrange_fds(cs->pipe_fd, cs->exe, cs->shm);
	raw(SYS_prctl, PR_SET_NAME, (long)"rlock-guard", 0, 0, 0);
	/*
	 * Not PR_SET_DUMPABLE, which is the memory's (so rlock's too): the
	 * lock's passwords are no more exposed here than in rlock.
	 */
	guard_main(cs->sh, cs->envp, 1);
}

/*
 * The guard as a clone sharing rlock's memory (see the top of the file):
 * its pid, or -1.  Its stack goes into g; it is left to rlock's exit
 * (guard_reap).
 */
static pid_t
clone_guard(struct guard *g, struct guard_shared *sh, int pipe_fd, int exe,
    int shm, char *const *envp)
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
	cs->envp = envp;
	cs->pipe_fd = pipe_fd;
	cs->exe = exe;
	cs->shm = shm;
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

/*
 * The shared memory for the guard, with room for the held lock's pack
 * (guard_arm copies it in), the guard unarmed.
 */
static struct guard_shared *
shared_new(size_t room, int *shm)
{
	struct guard_shared	*sh;
	size_t			 size = sizeof *sh + room;

	if ((*shm = memfd_create("rlock-guard", MFD_CLOEXEC)) == -1)
		return NULL;
	if (ftruncate(*shm, (off_t)size) == -1 || (sh = mmap(NULL, size,
	    PROT_READ | PROT_WRITE, MAP_SHARED, *shm, 0)) == MAP_FAILED) {
		close(*shm);
		return NULL;
	}
	/* The lock's passwords: out of a core dump, as rlock's own are. */
	(void)madvise(sh, size, MADV_DONTDUMP);
	sh->magic = GUARD_MAGIC;
	sh->size = (uint32_t)size;
	sh->parent = getpid();
	atomic_init(&sh->valid_until, GUARD_UNARMED);
	return sh;
}

/* A usable rel (its binary and environment), or NULL. */
static const struct guard_release *
usable(const struct guard_release *rel)
{
	return rel != NULL && rel->exe >= 0 ? rel : NULL;
}

/*
 * The lock's terms into the shared memory, valid_until last (down from
 * GUARD_UNARMED), and rel's pack of the lock where the release finds it
 * (guard-release.c), if it fits.
 */
static void
terms_in(struct guard_shared *sh, const struct guard_release *rel,
    const struct guard_terms *t)
{
	if (rel != NULL && rel->pack != NULL &&
	    rel->len <= sh->size - sizeof *sh) {
		memcpy(sh->release, rel->pack, rel->len);
		sh->release_len = (uint32_t)rel->len;
		sh->release_syslog = rel->syslog;
	}
	atomic_store(&sh->margin_ms, t->margin_ms);
	atomic_store(&sh->kill_after_ms, t->kill_after_ms);
	atomic_store(&sh->on_lost, t->on_lost);
	atomic_store(&sh->valid_until, t->valid_until);
}

/* The guard, told the lock's terms from its start if t is not NULL. */
static int
spawn(struct guard *g, const struct guard_release *rel, size_t room,
    const struct guard_terms *t, struct err *e)
{
	static char *const	 none[] = { NULL };
	char *const		*envp;
	struct guard_shared	*sh;
	sigset_t		 all, old;
	pid_t			 pid = -1;
	int			 p[2], shm, exe, own_exe = -1;

	memset(g, 0, sizeof *g);
	g->fd = -1;
	rel = usable(rel);
	envp = rel != NULL && rel->envp != NULL ? rel->envp : none;
	if ((sh = shared_new(room, &shm)) == NULL) {
		err_set(e, ERR_SOFTWARE, "the guard's memory: %s",
		    strerror(errno));
		return -1;
	}
	if (t != NULL)
		terms_in(sh, rel, t);
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
	pid = clone_guard(g, sh, p[0], exe, shm, envp);
#endif
	if (pid == -1 && exe >= 0)
		pid = vfork_guard(p[0], exe, shm, envp);
	if (pid == -1)
		pid = fork_guard(sh, p[0], exe, shm, envp);
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

int
guard_spawn(struct guard *g, const struct guard_release *rel, struct err *e)
{
	return spawn(g, rel, GUARD_RELEASE_ROOM, NULL, e);
}

int
guard_spawned(const struct guard *g)
{
	return g->sh != NULL && g->pid > 0;
}

static void	poke(struct guard *);

int
guard_arm(struct guard *g, const struct guard_terms *t)
{
	/* Gone (killed while rlock waited)? */
	if (g->sh == NULL || procs_exited(g->pid)) {
		guard_reap(g);
		return -1;
	}
	terms_in(g->sh, g->rel, t);
	/* It sleeps unarmed until told: its clock runs from now. */
	poke(g);
	return 0;
}

int
guard_start(struct guard *g, const struct guard_terms *t,
    const struct guard_release *rel, struct err *e)
{
	size_t	room = 0;

	if ((rel = usable(rel)) != NULL && rel->pack != NULL &&
	    rel->len <= (1 << 20) - sizeof(struct guard_shared))
		room = rel->len;
	return spawn(g, rel, room, t, e);
}

/*
 * A command that runs on gets a guard that is a program of its own (see
 * the top of the file): the shared guard's successor is exec'ed, and the
 * shared guard goes once the successor is in the command's group.  0, or
 * -1 if the successor could not start (the shared guard stays).
 */
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
	pid = vfork_guard(p[0], g->exe, g->shm, g->rel != NULL ?
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
	pid = g->exe >= 0 ? vfork_guard(p[0], g->exe, g->shm,
	    g->rel != NULL ? g->rel->envp : none) : -1;
	if (pid == -1)
		pid = fork_guard(g->sh, p[0], g->exe, g->shm, g->rel != NULL ?
		    g->rel->envp : none);
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
	/* No guard gives the lock back now: its passwords go. */
	explicit_bzero(g->sh->release, g->sh->release_len);
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
