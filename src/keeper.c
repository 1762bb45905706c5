/* keeper.c: acquire --hold's keeper: a lock that lives as long as its owner. */
#include "config.h"

/*
 * `T=$(rlock acquire --hold NAME)` takes the lock, forks the keeper and
 * prints the token; the keeper then holds the lock for the owner (the
 * process that ran rlock, or --pid), which no longer has to guess a TTL
 * longer than its slowest run, nor trap its own exit:
 *
 *  - It leaves the caller behind: a session of its own (the terminal's
 *    SIGHUP is not for it, and it ignores SIGHUP besides), every inherited
 *    descriptor closed and 0-2 on /dev/null, so that $(...) and any pipe
 *    the script reads see their end of file when rlock exits.  The
 *    Redis connections it inherited are closed unread (their TLS state is
 *    the parent's) and it connects afresh, as exec's heartbeat does.
 *  - One thread, one poll(): the owner's pidfd (readable when it ends:
 *    no reused pid can fool it) or, where the kernel has none, a look at
 *    /proc every OWNER_POLL_MS comparing its start time; the extend, due
 *    every TTL/3 and retried with a doubling backoff until the lock's
 *    local validity ends, as exec's heartbeat; and a listening socket
 *    through which `rlock release` announces a release.
 *  - The owner's end (whatever ended it) is a release, with the reason in
 *    the history; the keeper exits once it is sent.
 *  - How it learns of a release, with no Redis traffic: `rlock release`
 *    connects to an abstract Unix socket named by a hash of the prefix,
 *    name and token (nothing on disk, gone with the keeper), sends the
 *    token *before* it sends the release, and its outcome after.  From
 *    the announcement on the keeper sends no extend, so a refused extend
 *    is a loss unless an announcement is waiting: written before the
 *    release went out, it is always there first.  A release from another
 *    host (or network namespace) is found by the next extend, as a loss.
 *  - A release whose outcome is unknown (`rlock release` could not settle
 *    it, or went away before it said how it went) is still the owner
 *    letting go: the keeper never extends after it, nor takes the key
 *    gone for a loss; it exits, telling no one.  The lock is then gone,
 *    or goes when that release arrives or the TTL runs out.
 *  - A loss (an extend refused, or no extend confirmed before the local
 *    validity, which ends the drift margin before the server's TTL): the
 *    owner gets --on-lost's signal first -- its whole process group if it
 *    leads one (a script started from a terminal, cron or setsid), else
 *    the owner alone -- then a line on its standard error, if it is still
 *    open (reopened through /proc: the keeper keeps none of the caller's
 *    descriptors), in syslog with --syslog, and in the history.
 *  - A newcomer's exec --replace (an extend's reply says who): the owner
 *    is stopped as exec stops its command: --on-lost's signal (TERM if
 *    that is ignore) and a line, SIGKILL KEEPER_KILL_MS later; the keeper
 *    holds on until the owner has ended, then gives the lock back, which
 *    hands it to the newcomer.  Not with acquire --no-replace.
 *  - SIGTERM, SIGINT or SIGQUIT: the owner loses its keeper, and is told as
 *    on a loss; the lock is left to expire with its TTL, since the owner
 *    may still be running.
 *  - The keeper is watched as exec's rlock is by its guard: a watcher
 *    (rlock's binary again, exec'ed as `rlock-watch`, started before the
 *    keeper's first extend) reads a pipe whose only write end is the
 *    keeper's, and the validity the keeper last confirmed, in shared
 *    memory.  The keeper SIGKILLed (end of file without a word), or
 *    stopped or stuck past that validity: the watcher tells the owner as
 *    the keeper tells it of a loss (--on-lost's signal, a line on its
 *    stderr), at once or by the validity's end, before the lock can
 *    expire; the lock is left to expire with its TTL.  The owner is told
 *    once, whichever of the two tells it (acted).  A watcher that dies is
 *    started again by the keeper.
 */

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "duration.h"
#include "escape.h"
#include "keeper.h"
#include "log.h"
#include "signals.h"
#include "supervise.h"	/* format_time */
#include "util.h"

/* Without a pidfd, look at the owner this often. */
#define OWNER_POLL_MS		100
/* How long an announcing connection may stay silent. */
#define SILENT_MAX_MS		1000
#define BACKOFF_FIRST_MS	50
#define BACKOFF_MAX_MS		1000
/* A replaced owner (see the top) is sent SIGKILL this long after. */
#define KEEPER_KILL_MS		10000
#define ANNOUNCE		"release "
#define ANNOUNCE_TRIES		3
/* The watcher's shared memory: its first word. */
#define WATCH_MAGIC		0x726c6b77u
/* In the watcher: the pipe from the keeper, and the shared memory. */
#define WATCH_FD_PIPE		0
#define WATCH_FD_SHARED		3

/* What the keeper and its watcher share (see the top of the file). */
struct watch_shared {
	uint32_t	magic;
	uint32_t	size;
	_Atomic int64_t	valid_until;	/* CLOCK_MONOTONIC ms */
	_Atomic int	done;		/* the keeper ended on purpose */
	_Atomic int	acted;		/* the owner was told: 1 by the watcher,
					   2 by the keeper */
	/* Set once, before the watcher starts. */
	pid_t		keeper;
	pid_t		owner;
	uint64_t	owner_start;
	int		on_lost;
	int64_t		margin_ms;
	char		name[TOKEN_MAX + 1];
};

/* ------------------------------------------------------------ the owner */

/*
 * The state and start time of pid, from /proc/PID/stat: 0, or -1 if it
 * cannot be read (gone, or no /proc).
 */
static int
proc_stat(pid_t pid, char *state, uint64_t *start)
{
	char	 path[64], buf[1024], *p;
	ssize_t	 n;
	int	 fd, field;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name may hold anything, ")" too: after the last. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return -1;
	p += 2;
	*state = *p;
	/* Fields 3 (state) to 22 (starttime). */
	for (field = 3; field < 22; field++)
		if ((p = strchr(p, ' ')) == NULL)
			return -1;
		else
			p++;
	*start = strtoull(p, NULL, 10);
	return 0;
}

/* Is the owner still the process we started watching, and not a zombie? */
static int
owner_alive(const struct keeper *k)
{
	uint64_t	start;
	char		state;

	if (kill(k->owner, 0) == -1 && errno == ESRCH)
		return 0;
	if (proc_stat(k->owner, &state, &start) == -1)
		return k->owner_start == 0;	/* no /proc: kill(0) says */
	return start == k->owner_start && state != 'Z' && state != 'X';
}

int
keeper_watch(struct keeper *k, struct err *e)
{
	char	state;

	k->pidfd = -1;
	k->pid = -1;
	if (proc_stat(k->owner, &state, &k->owner_start) == -1) {
		k->owner_start = 0;
		if (kill(k->owner, 0) == -1 && errno == ESRCH)
			goto gone;
	} else if (state == 'Z' || state == 'X')
		goto gone;
#ifdef SYS_pidfd_open
	/* Close-on-exec by default. */
	k->pidfd = (int)syscall(SYS_pidfd_open, k->owner, 0);
	if (k->pidfd == -1 && errno == ESRCH)
		goto gone;
#endif
	/* The pidfd is of the process we looked at, not of one that reused its pid. */
	if (!owner_alive(k))
		goto gone;
	return 0;
gone:
	if (k->pidfd != -1)
		close(k->pidfd);
	k->pidfd = -1;
	err_set(e, ERR_USAGE, "no process %d to hold the lock for: it has "
	    "ended, or never was", (int)k->owner);
	return -1;
}

void
keeper_owner_command(pid_t pid, char *buf, size_t len)
{
	char	path[64], argv[512];
	ssize_t	n = 0, i;
	int	fd;

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		n = read(fd, argv, sizeof argv - 1);
		close(fd);
	}
	if (n < 0)
		n = 0;
	while (n > 0 && argv[n - 1] == '\0')
		n--;
	argv[n] = '\0';
	for (i = 0; i < n; i++)
		if (argv[i] == '\0')
			argv[i] = ' ';
	snprintf(buf, len, "[rlock --hold] %s", n > 0 ? argv : "?");
}

/* Send the owner sig: its group if it leads one, else the owner itself. */
static void
signal_owner(const struct keeper *k, int sig)
{
	if (sig == 0 || !owner_alive(k))
		return;
	if (getpgid(k->owner) == k->owner && kill(-k->owner, sig) == 0)
		return;
#ifdef SYS_pidfd_send_signal
	if (k->pidfd != -1 &&
	    syscall(SYS_pidfd_send_signal, k->pidfd, sig, NULL, 0) == 0)
		return;
#endif
	kill(k->owner, sig);
}

/*
 * The owner's standard error, if it is still open: reopened through /proc,
 * appending, never blocking; -1 if it cannot be.  Opened before the owner
 * is signalled, so that an owner the signal kills still gets the line.
 */
static int
owner_stderr(const struct keeper *k)
{
	char	path[64];

	if (!owner_alive(k))
		return -1;
	snprintf(path, sizeof path, "/proc/%d/fd/2", (int)k->owner);
	return open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK |
	    O_CLOEXEC);
}

static void
tell_owner(int fd, const char *line)
{
	if (fd == -1)
		return;
	if (write(fd, line, strlen(line)) == -1) {
		/* Best effort: it may be a full pipe. */
	}
	close(fd);
}

/* ---------------------------------------------------------- the watcher */

static void	close_span(int, int);

/*
 * The watcher tells the owner that nothing keeps its lock any more: once,
 * and only if the keeper has not told it first.
 */
static void __attribute__((noreturn))
watch_act(struct watch_shared *ws, const char *why)
{
	struct keeper	k;
	char		when[64], sent[64], line[1024];
	int		none = 0, fd;

	if (!atomic_compare_exchange_strong(&ws->acted, &none, 1))
		_exit(0);
	memset(&k, 0, sizeof k);
	k.owner = ws->owner;
	k.owner_start = ws->owner_start;
	k.pidfd = -1;
	fd = owner_stderr(&k);
	signal_owner(&k, ws->on_lost);
	if (ws->on_lost != 0)
		snprintf(sent, sizeof sent, "pid %d was sent SIG%s",
		    (int)ws->owner, sigabbrev_np(ws->on_lost));
	else
		snprintf(sent, sizeof sent, "nothing was sent (--on-lost "
		    "ignore)");
	snprintf(line, sizeof line, "rlock: lock '%s' held by acquire --hold: "
	    "%s at %s; the lock expires with its TTL; %s\n", ws->name, why,
	    format_time(now_wall_ms(), when, sizeof when), sent);
	tell_owner(fd, line);
	_exit(0);
}

int
keeper_watch_main(void)
{
	struct watch_shared	*ws;
	struct stat		 st;
	struct pollfd		 pfd = { WATCH_FD_PIPE, POLLIN, 0 };
	sigset_t		 all;
	int64_t			 now, until;
	char			 buf[64], why[128];
	ssize_t			 n;

	/* Only SIGKILL ends it: what the keeper's group gets is not for it. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
#ifdef HAVE_PRCTL
	prctl(PR_SET_NAME, "rlock-watch");
#endif
	if (fstat(WATCH_FD_SHARED, &st) == -1 ||
	    st.st_size != (off_t)sizeof *ws)
		return EXIT_USAGE;
	ws = mmap(NULL, sizeof *ws, PROT_READ | PROT_WRITE, MAP_SHARED,
	    WATCH_FD_SHARED, 0);
	close(WATCH_FD_SHARED);
	if (ws == MAP_FAILED || ws->magic != WATCH_MAGIC ||
	    ws->size != sizeof *ws)
		return EXIT_USAGE;
	ws->name[sizeof ws->name - 1] = '\0';
	for (;;) {
		if (atomic_load(&ws->done))
			_exit(0);
		now = now_mono_ms();
		until = atomic_load(&ws->valid_until) + ws->margin_ms;
		if (now >= until) {
			snprintf(why, sizeof why, "its keeper (pid %d) did not "
			    "extend it in time (stopped, or stuck)",
			    (int)ws->keeper);
			watch_act(ws, why);
		}
		if (poll(&pfd, 1, until - now > 3600000 ? 3600000 :
		    (int)(until - now)) <= 0)
			continue;
		n = read(WATCH_FD_PIPE, buf, sizeof buf);
		if (n == 0) {
			/* The keeper is gone; unless it said so, it died. */
			if (atomic_load(&ws->done))
				_exit(0);
			snprintf(why, sizeof why, "its keeper (pid %d) died",
			    (int)ws->keeper);
			watch_act(ws, why);
		}
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			_exit(0);
	}
}

/*
 * Start the watcher: rlock's binary, exec'ed with the pipe's read end as
 * 0 and the shared memory as 3.  Its pid, or -1.  (The keeper has one
 * thread: a vfork is safe, and its child runs nothing but system calls.)
 */
static pid_t
watch_start(int shm, int *wfd)
{
	static char	 name[] = "rlock-watch", arg[] = KEEPER_WATCH_ARG;
	char		*argv[] = { name, arg, NULL }, *envp[] = { NULL };
	volatile int	 err = 0;
	pid_t		 pid;
	int		 p[2];

	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	if ((pid = vfork()) == 0) {
		if (dup2(p[0], WATCH_FD_PIPE) == -1 ||
		    (shm == WATCH_FD_SHARED ? fcntl(shm, F_SETFD, 0) :
		    dup2(shm, WATCH_FD_SHARED)) == -1)
			_exit(127);
		close_span(WATCH_FD_SHARED + 1, INT_MAX);
		execve("/proc/self/exe", argv, envp);
		err = errno;
		_exit(127);
	}
	close(p[0]);
	if (pid > 0 && err != 0) {
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	if (pid == -1) {
		close(p[1]);
		return -1;
	}
	*wfd = p[1];
	return pid;
}

/* ----------------------------------------------------- the release side */

/* The keeper's abstract socket: a hash of the lock and the token. */
static socklen_t
keeper_address(const char *prefix, const char *name, const char *token,
    struct sockaddr_un *a)
{
	const char	*parts[3] = { prefix, name, token };
	uint64_t	 h = 0xcbf29ce484222325ULL;	/* FNV-1a */
	const char	*p;
	int		 i, n;

	for (i = 0; i < 3; i++)
		for (p = parts[i]; ; p++) {
			h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
			if (*p == '\0')
				break;
		}
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	/* sun_path[0] stays '\0': the abstract namespace. */
	n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1,
	    "rlock-keeper-%016llx", (unsigned long long)h);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int
keeper_announce(const char *prefix, const char *name, const char *token)
{
	struct sockaddr_un	 a;
	socklen_t		 len;
	char			*msg;
	int			 fd = -1, tries;

	len = keeper_address(prefix, name, token, &a);
	xasprintf(&msg, ANNOUNCE "%s", token);
	/*
	 * The keeper drops a connection that stays silent SILENT_MAX_MS: one
	 * stalled (a loaded host) between its connect and its send finds the
	 * connection closed, and tries again rather than leave the keeper to
	 * take the release for a loss.
	 */
	for (tries = 0; tries < ANNOUNCE_TRIES; tries++) {
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd == -1)
			break;
		if (connect(fd, (struct sockaddr *)&a, len) == -1) {
			close(fd);
			fd = -1;
			break;		/* no keeper here */
		}
		if (send(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT) !=
		    -1)
			break;
		close(fd);
		fd = -1;
	}
	free(msg);
	return fd;
}

void
keeper_released(int fd, int rc)
{
	char	c = rc == 1 ? '1' : rc == 0 ? '0' : 'e';

	if (fd == -1)
		return;
	if (send(fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == -1) {
		/* It is gone: nothing to tell. */
	}
	close(fd);
}

/* ---------------------------------------------------------- the keeper */

struct keep {
	struct keeper	*k;
	struct held	 h;		/* the keeper's clone of the lock */
	int		 lsock;		/* -1: none */
	int		 conn;		/* an announcing connection, or -1 */
	int64_t		 conn_until;	/* ... which must speak by then */
	int		 releasing;	/* announced: no more extends */
	int64_t		 next;		/* the next extend */
	int64_t		 kill_at;	/* replaced: SIGKILL due (-1 sent) */
	int64_t		 backoff;
	char		 last_error[sizeof ((struct err *)0)->msg];
	/* The watcher (see the top of the file): -1 / NULL if none. */
	struct watch_shared *ws;
	int		 shm, wfd;
	pid_t		 watcher;
};

/* Close fds lo..hi. */
static void
close_span(int lo, int hi)
{
	long	max, fd;

	if (lo > hi)
		return;
#ifdef HAVE_CLOSE_RANGE
	if (close_range((unsigned)lo, (unsigned)hi, 0) == 0)
		return;
#endif
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (fd = lo; fd <= hi && fd < max; fd++)
		close((int)fd);
}

/* Close every descriptor from 3 on but a and b (-1: none). */
static void
close_all_but(int a, int b)
{
	int	keep[2], from = 3, i;

	keep[0] = a < b ? a : b;
	keep[1] = a < b ? b : a;
	for (i = 0; i < 2; i++) {
		if (keep[i] < from)
			continue;
		close_span(from, keep[i] - 1);
		from = keep[i] + 1;
	}
	close_span(from, INT_MAX);
}

static int
listen_on(const struct lock *l, const char *prefix)
{
	struct sockaddr_un	a;
	socklen_t		len;
	int			fd;

	len = keeper_address(prefix, l->name, l->token, &a);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	/* Taken (the same token held twice on this host): no announcements. */
	if (bind(fd, (struct sockaddr *)&a, len) == -1 || listen(fd, 4) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
drop_conn(struct keep *kp)
{
	if (kp->conn != -1)
		close(kp->conn);
	kp->conn = -1;
	kp->releasing = 0;
}

/* What an announcing connection says (read_conn, accept_conn). */
#define HEARD_NOTHING	0	/* still waiting, or no announcement */
#define HEARD_RELEASED	1	/* released; or found lost, and said so */
#define HEARD_UNKNOWN	2	/* a release whose outcome is unknown */

/* Read what the announcing connection has to say: HEARD_*. */
static int
read_conn(struct keep *kp)
{
	char	msg[TOKEN_MAX + sizeof ANNOUNCE + 1];
	ssize_t	n;

	while (kp->conn != -1) {
		n = recv(kp->conn, msg, sizeof msg - 1, MSG_DONTWAIT);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return HEARD_NOTHING;
		if (n <= 0) {
			/*
			 * The releaser went away without an outcome: its
			 * release may have gone out, or not.
			 */
			n = kp->releasing;
			drop_conn(kp);
			return n ? HEARD_UNKNOWN : HEARD_NOTHING;
		}
		msg[n] = '\0';
		if (!kp->releasing) {
			if (strncmp(msg, ANNOUNCE, strlen(ANNOUNCE)) != 0 ||
			    strcmp(msg + strlen(ANNOUNCE), kp->h.l.token) !=
			    0) {
				drop_conn(kp);
				return HEARD_NOTHING;
			}
			kp->releasing = 1;
			continue;
		}
		if (msg[0] == '1' || msg[0] == '0')
			return HEARD_RELEASED;
		/*
		 * The release failed or could not be settled: it may have run
		 * (its reply lost), or may yet (a server that answers late).
		 */
		drop_conn(kp);
		return HEARD_UNKNOWN;
	}
	return HEARD_NOTHING;
}

/* Take a waiting announcement, if any: HEARD_*. */
static int
accept_conn(struct keep *kp)
{
	int	fd;

	if (kp->conn != -1 || kp->lsock == -1)
		return read_conn(kp);
	fd = accept4(kp->lsock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd == -1)
		return HEARD_NOTHING;
	kp->conn = fd;
	kp->conn_until = now_mono_ms() + SILENT_MAX_MS;
	return read_conn(kp);
}

static void
done(struct keep *kp, int status)
{
	/* Said before the pipe closes: the watcher goes quietly. */
	if (kp->ws != NULL)
		atomic_store(&kp->ws->done, 1);
	held_free(&kp->h);
	if (kp->k->pidfd != -1)
		close(kp->k->pidfd);
	_exit(status);
}

/* The owner has ended: give the lock back, retrying while it is ours. */
static void
owner_ended(struct keep *kp)
{
	struct err	e;
	char		why[64];

	snprintf(why, sizeof why, "the owner (pid %d) ended",
	    (int)kp->k->owner);
	quorum_limit(&kp->h.q, 0);
	/*
	 * Sent once; after a reply lost, settled (asked, and sent again
	 * only while the token holds it): a second release after a first
	 * that ran would record a loss.
	 */
	if (lock_release(&kp->h.l, why, &e) == -1 &&
	    now_mono_ms() < kp->h.l.valid_until)
		lock_settle_release(&kp->h.l, why, kp->h.l.valid_until, &e);
	log_verbose("%s: %s; the lock was given back", kp->h.l.name, why);
	done(kp, 0);
}

/*
 * What an announcement said: released, and the keeper is done; or a
 * release whose outcome is unknown.  The owner asked to let go, so that
 * is no loss whatever an extend would now find: the keeper stops,
 * quietly.  It does not release again: the owner's release may still
 * arrive late (a server that answers late), and a second release racing
 * it could find the key gone and record a loss (see lock.c).
 */
static void
heard(struct keep *kp, int what)
{
	if (what == HEARD_NOTHING)
		return;
	log_verbose("%s: released by rlock release%s", kp->h.l.name,
	    what == HEARD_UNKNOWN ? " (its outcome unknown: the lock goes "
	    "with it, or with its TTL)" : "");
	done(kp, 0);
}

/* The lock is lost (or its keeper stopped): the owner is told, first. */
static void
lost(struct keep *kp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
lost(struct keep *kp, const char *fmt, ...)
{
	const struct keeper	*k = kp->k;
	char			 why[512], when[64], sent[64], line[1024];
	struct buf		 shown;
	va_list			 ap;
	int			 fd, none = 0;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	/*
	 * A signal that stopped the keeper is taken: left pending, it would
	 * cut the note's round trip short (quorum.c gives up on a signal),
	 * and the history would miss the loss as often as not.
	 */
	signal_caught = 0;
	/* The watcher told the owner already (the keeper was stopped). */
	if (kp->ws != NULL &&
	    !atomic_compare_exchange_strong(&kp->ws->acted, &none, 2)) {
		lock_note(&kp->h.l, "lost", why, "");
		done(kp, 0);
	}
	fd = owner_stderr(k);
	signal_owner(k, k->on_lost);
	if (k->on_lost != 0)
		snprintf(sent, sizeof sent, "pid %d was sent SIG%s",
		    (int)k->owner, sigabbrev_np(k->on_lost));
	else
		snprintf(sent, sizeof sent, "nothing was sent (--on-lost "
		    "ignore)");
	/* why may quote a server: escaped, as log.c does (see escape.c). */
	buf_init(&shown);
	escape_adds(&shown, why);
	snprintf(line, sizeof line, "rlock: lock '%s' held by acquire --hold "
	    "was lost at %s: %s; %s\n", kp->h.l.name,
	    format_time(now_wall_ms(), when, sizeof when), shown.p, sent);
	buf_free(&shown);
	tell_owner(fd, line);
	/* stderr is /dev/null: this is for syslog. */
	log_error("%.*s", (int)strlen(line) - 8, line + 7);
	lock_note(&kp->h.l, "lost", why, "");
	done(kp, 0);
}

/* A newcomer's exec --replace: the owner is stopped (see the top). */
static void
replaced(struct keep *kp)
{
	const struct keeper	*k = kp->k;
	int			 sig = k->on_lost != 0 ? k->on_lost : SIGTERM;
	int			 fd = owner_stderr(k);
	struct buf		 b;

	signal_owner(k, sig);
	buf_init(&b);
	buf_printf(&b, "rlock: lock '%s' held by acquire --hold is replaced "
	    "by ", kp->h.l.name);
	escape_adds(&b, kp->h.l.replace_host);
	buf_adds(&b, " pid ");
	escape_adds(&b, kp->h.l.replace_pid);
	buf_printf(&b, " (--replace); pid %d was sent SIG%s\n",
	    (int)k->owner, sigabbrev_np(sig));
	tell_owner(fd, b.p);
	log_notice("%.*s", (int)b.len - 8, b.p + 7);
	buf_free(&b);
	kp->kill_at = now_mono_ms() + KEEPER_KILL_MS;
}

/*
 * One extend.  Confirmed: the next is due in TTL/3; failed: retried after
 * a backoff; refused: a release, or a loss (neither returns).
 */
static void
extend(struct keep *kp)
{
	struct err	e;
	char		d[32];
	int		rc;

	err_clear(&e);
	quorum_limit(&kp->h.q, kp->h.l.valid_until);
	rc = lock_extend(&kp->h.l, kp->h.l.ttl_ms, &e);
	if (rc == 1) {
		if (kp->ws != NULL)
			atomic_store(&kp->ws->valid_until, kp->h.l.valid_until);
		log_verbose("extended %s by %s", kp->h.l.name,
		    duration_format(kp->h.l.ttl_ms, d, sizeof d));
		kp->next = now_mono_ms() + kp->h.l.ttl_ms / 3;
		kp->backoff = BACKOFF_FIRST_MS;
		if (kp->h.l.replace_host[0] != '\0' && kp->kill_at == 0)
			replaced(kp);
		return;
	}
	if (rc == 0) {
		/* Refused: by our own release, announced before it was sent? */
		heard(kp, accept_conn(kp));
		if (kp->releasing)
			return;
		lost(kp, "the lock's key is gone or holds another token");
	}
	snprintf(kp->last_error, sizeof kp->last_error, "%s", e.msg);
	kp->next = now_mono_ms() + kp->backoff;
	if ((kp->backoff *= 2) > BACKOFF_MAX_MS)
		kp->backoff = BACKOFF_MAX_MS;
}

/*
 * Start (or start again) the keeper's watcher.  Without one the keeper
 * runs on as before: its SIGKILL then leaves the owner untold.
 */
static void
watch_again(struct keep *kp)
{
	if (kp->wfd != -1)
		close(kp->wfd);
	kp->wfd = -1;
	if (kp->shm == -1 || (kp->watcher = watch_start(kp->shm,
	    &kp->wfd)) == -1)
		log_error("%s: cannot start the keeper's watcher: %s; a "
		    "SIGKILL of the keeper would leave the owner untold",
		    kp->h.l.name, strerror(errno));
}

/* The watcher's shared memory, and the watcher. */
static void
watch_init(struct keep *kp)
{
	struct watch_shared	*ws;
	int64_t			 margin = lock_drift(kp->h.l.ttl_ms) / 2;

	kp->shm = kp->wfd = -1;
	kp->watcher = -1;
	if ((kp->shm = memfd_create("rlock-watch", MFD_CLOEXEC)) == -1 ||
	    ftruncate(kp->shm, (off_t)sizeof *ws) == -1 ||
	    (ws = mmap(NULL, sizeof *ws, PROT_READ | PROT_WRITE, MAP_SHARED,
	    kp->shm, 0)) == MAP_FAILED) {
		if (kp->shm != -1)
			close(kp->shm);
		kp->shm = -1;
		watch_again(kp);
		return;
	}
	ws->magic = WATCH_MAGIC;
	ws->size = sizeof *ws;
	atomic_init(&ws->valid_until, kp->h.l.valid_until);
	ws->keeper = getpid();
	ws->owner = kp->k->owner;
	ws->owner_start = kp->k->owner_start;
	ws->on_lost = kp->k->on_lost;
	/* Half the drift: the keeper's own deadline first, the TTL after. */
	ws->margin_ms = margin > 0 ? margin : 1;
	snprintf(ws->name, sizeof ws->name, "%s", kp->h.l.name);
	kp->ws = ws;
	watch_again(kp);
}

/* A watcher that died (it never ends while the keeper runs) starts again. */
static void
watch_check(struct keep *kp)
{
	if (kp->watcher > 0 && waitpid(kp->watcher, NULL, WNOHANG) ==
	    kp->watcher) {
		kp->watcher = -1;
		watch_again(kp);
	}
}

/* The keeper's own copy of the lock, on connections of its own. */
static void
keep_init(struct keep *kp, struct keeper *k, const struct lock *src,
    int lsock)
{
	memset(kp, 0, sizeof *kp);
	kp->k = k;
	kp->lsock = lsock;
	kp->conn = -1;
	kp->backoff = BACKOFF_FIRST_MS;
	held_clone(&kp->h, src, &k->target);
	kp->next = src->acquired_at + src->ttl_ms / 3;
	watch_init(kp);
}

/*
 * Sleep until the next thing to do (now: when), or until the owner ends,
 * a release is announced, or a signal comes; act on what woke us.
 */
static void
wait_events(struct keep *kp, int64_t now, const sigset_t *waitmask)
{
	const struct keeper	*k = kp->k;
	struct pollfd		 pfd[3];
	struct timespec		 ts;
	int64_t			 until;
	int			 n = 0, ipid = -1, ilsock = -1, iconn = -1;

	until = kp->releasing ? kp->h.l.valid_until :
	    kp->next < kp->h.l.valid_until ? kp->next : kp->h.l.valid_until;
	if (kp->conn != -1 && !kp->releasing && kp->conn_until < until)
		until = kp->conn_until;
	if (k->pidfd == -1 && !kp->releasing && now + OWNER_POLL_MS < until)
		until = now + OWNER_POLL_MS;
	if (kp->kill_at > 0 && kp->kill_at < until)
		until = kp->kill_at;
	if (k->pidfd != -1 && !kp->releasing) {
		pfd[n] = (struct pollfd){ .fd = k->pidfd, .events = POLLIN };
		ipid = n++;
	}
	if (kp->conn != -1) {
		pfd[n] = (struct pollfd){ .fd = kp->conn, .events = POLLIN };
		iconn = n++;
	} else if (kp->lsock != -1) {
		pfd[n] = (struct pollfd){ .fd = kp->lsock, .events = POLLIN };
		ilsock = n++;
	}
	if ((until -= now) < 0)
		until = 0;
	ts.tv_sec = until / 1000;
	ts.tv_nsec = until % 1000 * 1000000;
	if (ppoll(pfd, (nfds_t)n, &ts, waitmask) <= 0)
		return;
	if (ipid != -1 && pfd[ipid].revents != 0)
		owner_ended(kp);
	if (iconn != -1 && pfd[iconn].revents != 0)
		heard(kp, read_conn(kp));
	else if (ilsock != -1 && pfd[ilsock].revents != 0)
		heard(kp, accept_conn(kp));
}

static void
keep(struct keeper *k, const struct lock *src, int lsock)
{
	struct keep	 kp;
	sigset_t	 waitmask;
	int64_t		 now;

	keep_init(&kp, k, src, lsock);
	sigprocmask(SIG_SETMASK, NULL, &waitmask);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGQUIT);
	for (;;) {
		watch_check(&kp);
		if (signal_caught && !kp.releasing && !owner_alive(k))
			owner_ended(&kp);
		if (signal_caught)
			lost(&kp, "its keeper was stopped by SIG%s; the lock "
			    "expires with its TTL", sigabbrev_np(signal_caught));
		/*
		 * An owner that ends while its release is under way leaves
		 * the lock to that release: waited for, not raced.
		 */
		if (k->pidfd == -1 && !kp.releasing && !owner_alive(k))
			owner_ended(&kp);
		now = now_mono_ms();
		if (now >= kp.h.l.valid_until) {
			/*
			 * An announcement that came while an extend ran to
			 * the validity's end (the extend blocks: a silent
			 * server) was made by then: the owner let go first.
			 */
			if (!kp.releasing)
				heard(&kp, accept_conn(&kp));
			/* Announced and not answered: it is being released. */
			if (kp.releasing)
				done(&kp, 0);
			lost(&kp, "no extend was confirmed before the lock's "
			    "validity ended (last error: %s)",
			    kp.last_error[0] ? kp.last_error : "none");
		}
		if (kp.kill_at > 0 && now >= kp.kill_at) {
			signal_owner(k, SIGKILL);
			kp.kill_at = -1;
		}
		if (!kp.releasing && now >= kp.next) {
			extend(&kp);
			continue;
		}
		/* Silent too long: unless its announcement came just now. */
		if (kp.conn != -1 && !kp.releasing && now >= kp.conn_until) {
			heard(&kp, read_conn(&kp));
			if (kp.conn != -1 && !kp.releasing)
				drop_conn(&kp);
		}
		wait_events(&kp, now, &waitmask);
	}
}

/* In the keeper, from the fork on. */
static void
run(struct keeper *k, const struct lock *l, int lsock)
{
	sigset_t	block;
	int		fd;

	setsid();
	signal(SIGHUP, SIG_IGN);
	/* Caught (signals_catch) but only ever delivered inside ppoll. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGQUIT);
	sigprocmask(SIG_BLOCK, &block, NULL);
	signal_caught = 0;
	/* Its descriptor goes below; syslog() opens a new one when needed. */
	closelog();
	close_all_but(k->pidfd, lsock);
	if ((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) != -1) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	} else {
		/* Not the caller's, whatever happens. */
		close(0);
		close(1);
		close(2);
	}
	if (chdir("/") == -1) {
		/* Only so as not to hold a directory busy. */
	}
	keep(k, l, lsock);
	_exit(0);
}

int
keeper_start(struct keeper *k, const struct lock *l, struct err *e)
{
	pid_t	pid;
	int	lsock;

	/*
	 * Listening before the fork: the caller prints the token once this
	 * returns, and a `rlock release` run at once must find the keeper's
	 * socket there, or its release would be taken for a loss.
	 */
	lsock = listen_on(l, k->target.prefix);
	fflush(NULL);
	if ((pid = fork()) == -1) {
		err_set(e, ERR_SOFTWARE, "cannot start the keeper: fork: %s",
		    strerror(errno));
		if (lsock != -1)
			close(lsock);
		return -1;
	}
	if (pid == 0)
		run(k, l, lsock);
	if (lsock != -1)
		close(lsock);
	k->pid = pid;
	return 0;
}
