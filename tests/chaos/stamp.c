/*
 * stamp.c: the guarded command of the fault checker (tests/chaos), compiled
 * by run.sh into its temporary directory with cc.
 *
 *   stamp                      print CLOCK_MONOTONIC in nanoseconds
 *   stamp sec LOG MS [STOP_MS] one section: log "E" (enter), sleep MS
 *                              milliseconds, log "X" (exit) and exit 0; a
 *                              terminating signal ends it at once with "S"
 *                              and "X" lines and exit 128+signal.  With
 *                              STOP_MS > 0 it first stops its parent (rlock)
 *                              with SIGSTOP, and the watch daemon continues
 *                              it STOP_MS later (a freeze of rlock in its
 *                              first moments).  With STOP_MS < 0 it stops
 *                              its parent at its end instead, once its "X"
 *                              line is written, for -STOP_MS milliseconds
 *                              (rlock frozen between its command's end and
 *                              its release: issue 49 break 1).
 *   stamp watchd SOCK LOG SECS the watch daemon (started by the checker)
 *
 * Every line is one write(2) to LOG opened with O_APPEND, so lines from many
 * processes never interleave, and starts with its kind and the time on
 * CLOCK_MONOTONIC (system-wide, comparable with the checker's own clock):
 *
 *   E NS ATTEMPT PID FENCE     entered (FENCE: $RLOCK_FENCE)
 *   S NS ATTEMPT PID SIGNO     received a terminating signal
 *   X NS ATTEMPT PID ok|sigN   left the section
 *   P NS ATTEMPT PPID MS G     stopped its parent for MS milliseconds;
 *                              G: 1 if the parent had another child (its
 *                              guard) just before, 0 if not, -1 unknown
 *   L NS ATTEMPT PPID MS G     stopped its parent at its end (STOP_MS < 0)
 *   D NS ATTEMPT PID PPID MS   the section process has ended, however it
 *                              ended (SIGKILL included)
 *   C NS ATTEMPT PPID          continued the parent
 *
 * ATTEMPT is $CHAOS_ATTEMPT, the checker's name for the run of rlock.  The
 * "D" and "C" lines come from the watch daemon ($CHAOS_WATCH, a Unix
 * socket), a child of the checker, outside rlock's process tree: a section
 * connects to it before it enters and holds the connection until it ends, so
 * the end of file is the section's end, to within a wake-up, even when the
 * section could write nothing (SIGKILL).  A watcher forked by the section
 * itself would be rlock's descendant (rlock is a child subreaper): a leftover
 * that rlock waits for, and killed with the command.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The watcher gives up after this long whatever happens (a bound). */
static int logfd = -1;
static const char *attempt = "-";

static long long
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One line, one write(2): O_APPEND makes it land whole at the end. */
static void
logline(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	while (write(logfd, buf, (size_t)n) < 0 && errno == EINTR)
		;
}

/*
 * Tell the watch daemon about this section: it logs "D" when the connection
 * ends (this process's end, however it comes: only this process holds the
 * socket) and continues the parent STOP_MS later.  Returns the socket, or -1
 * (then there is no "D" line; the checker falls back on other bounds).
 */
static int
announce(const char *sock, pid_t parent, long long stop_ms)
{
	struct sockaddr_un sa;
	char hello[160];
	int fd, n;

	if (sock == NULL || strlen(sock) >= sizeof(sa.sun_path))
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, sock);
	n = snprintf(hello, sizeof(hello), "%s %ld %ld %lld\n", attempt,
	    (long)getpid(), (long)parent, stop_ms);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    n <= 0 || (size_t)n >= sizeof(hello) ||
	    write(fd, hello, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A watched connection of the daemon. */
struct watched {
	char		hello[160];
	char		att[128];	/* the attempt of the SIGCONT due */
	size_t		len;
	long long	cont_at;	/* 0: no SIGCONT due */
	long		parent;
};

#define WATCH_MAX	1024

/*
 * stamp watchd SOCK LOG SECONDS: accept sections' connections on SOCK; log
 * "D" when one ends, send the SIGCONTs asked for; exit after SECONDS (or on
 * SIGTERM).  C and poll(2), so that a "D" time is the end to within a
 * wake-up.
 */
static int
watchd(const char *sock, const char *path, long long seconds)
{
	static struct watched w[WATCH_MAX + 1];
	struct pollfd p[WATCH_MAX + 1];
	struct sockaddr_un sa;
	long long stop = mono_ns() + seconds * 1000000000LL;
	int lfd, i, n = 1;

	if ((logfd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) < 0) {
		perror(path);
		return 70;
	}
	if ((lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 70;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(sock) >= sizeof(sa.sun_path))
		return 64;
	strcpy(sa.sun_path, sock);
	unlink(sock);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(lfd, 128) != 0) {
		perror(sock);
		return 70;
	}
	printf("ready\n");
	fflush(stdout);
	p[0].fd = lfd;
	p[0].events = POLLIN;
	while (mono_ns() < stop) {
		long long now = mono_ns(), next = now + 1000000000LL;

		for (i = 1; i < WATCH_MAX + 1; i++) {
			if (w[i].cont_at == 0)
				continue;
			if (w[i].cont_at <= now) {
				kill((pid_t)w[i].parent, SIGCONT);
				logline("C %lld %s %ld\n", mono_ns(), w[i].att,
				    w[i].parent);
				w[i].cont_at = 0;
			} else if (w[i].cont_at < next)
				next = w[i].cont_at;
		}
		if (poll(p, (nfds_t)n, (int)((next - now) / 1000000LL) + 1) <= 0)
			continue;
		for (i = 1; i < n; i++) {
			char buf[160];
			ssize_t r;

			if (p[i].fd < 0 || p[i].revents == 0)
				continue;
			r = read(p[i].fd, buf, sizeof(buf));
			if (r > 0) {
				size_t room = sizeof(w[i].hello) - 1 - w[i].len;
				char a[128];
				long pid, parent;
				long long ms;

				if ((size_t)r > room)
					r = (ssize_t)room;
				memcpy(w[i].hello + w[i].len, buf, (size_t)r);
				w[i].len += (size_t)r;
				w[i].hello[w[i].len] = '\0';
				if (strchr(w[i].hello, '\n') != NULL &&
				    sscanf(w[i].hello, "%127s %ld %ld %lld", a, &pid,
				    &parent, &ms) == 4 && ms > 0 && w[i].cont_at == 0) {
					w[i].parent = parent;
					memcpy(w[i].att, a, sizeof(w[i].att));
					w[i].cont_at = mono_ns() + ms * 1000000LL;
				}
				continue;
			}
			if (r < 0 && errno == EINTR)
				continue;
			/* End of file: the section process has ended. */
			w[i].hello[strcspn(w[i].hello, "\n")] = '\0';
			logline("D %lld %s\n", mono_ns(), w[i].hello);
			close(p[i].fd);
			p[i].fd = -1;
			w[i].len = 0;
			w[i].hello[0] = '\0';
		}
		if (p[0].revents & POLLIN) {
			int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (cfd >= 0) {
				for (i = 1; i < n && (p[i].fd >= 0 || w[i].cont_at != 0); i++)
					;
				if (i == n && n == WATCH_MAX + 1) {
					close(cfd);	/* full: no "D" for it */
					continue;
				}
				if (i == n)
					n++;
				p[i].fd = cfd;
				p[i].events = POLLIN;
				w[i].len = 0;
				w[i].hello[0] = '\0';
			}
		}
		/* Slots freed at the end are reused; n never shrinks (bounded). */
	}
	unlink(sock);
	return 0;
}

/*
 * Has the parent another child than this process (its guard, forked or
 * about to be named rlock-guard)?  Read from /proc/PPID/task/TID/children
 * of each of its threads; -1 if it cannot be told.  Logged with an early
 * stop: a stop that lands before the guard exists is the unguarded window.
 */
static int
has_sibling(pid_t parent)
{
	char path[64], buf[4096];
	struct dirent *d;
	DIR *dir;
	int fd, found = 0, any = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/task", (long)parent);
	if ((dir = opendir(path)) == NULL)
		return -1;
	while ((d = readdir(dir)) != NULL && !found) {
		char *p, *end;

		if (d->d_name[0] == '.')
			continue;
		snprintf(buf, sizeof(buf), "%s/%s/children", path, d->d_name);
		if ((fd = open(buf, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n < 0)
			continue;
		any = 1;
		buf[n] = '\0';
		for (p = buf; *p != '\0'; p = end) {
			long c = strtol(p, &end, 10);

			if (end == p)
				break;
			if (c != (long)getpid())
				found = 1;
		}
	}
	closedir(dir);
	return any ? found : -1;
}

static int
section(const char *path, long long ms, long long stop_ms)
{
	const char *fence = getenv("RLOCK_FENCE");
	pid_t parent = getppid();
	sigset_t set;
	struct timespec ts;
	siginfo_t si;
	long long end;
	int sig, wfd;

	if ((logfd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) < 0) {
		perror(path);
		return 70;
	}
	if (getenv("CHAOS_ATTEMPT") != NULL)
		attempt = getenv("CHAOS_ATTEMPT");
	/* Signals are taken synchronously, with their time of arrival. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	/*
	 * A stop at the end is continued MS + its length after the start,
	 * about its length after the end (the daemon counts from here).
	 */
	wfd = announce(getenv("CHAOS_WATCH"), parent,
	    stop_ms < 0 ? ms - stop_ms : stop_ms);
	if (stop_ms > 0 && wfd >= 0) {
		int guarded = has_sibling(parent);

		kill(parent, SIGSTOP);
		logline("P %lld %s %ld %lld %d\n", mono_ns(), attempt, (long)parent,
		    stop_ms, guarded);
	}
	logline("E %lld %s %ld %s\n", mono_ns(), attempt, (long)getpid(),
	    fence != NULL && *fence != '\0' ? fence : "-");
	end = mono_ns() + ms * 1000000LL;
	for (;;) {
		long long left = end - mono_ns();

		/*
		 * Past the end, one more look (a zero wait): a signal that came
		 * while this process was stopped is still reported.
		 */
		if (left < 0)
			left = 0;
		ts.tv_sec = left / 1000000000LL;
		ts.tv_nsec = left % 1000000000LL;
		sig = sigtimedwait(&set, &si, &ts);
		if (sig < 0 && left == 0)
			break;
		if (sig > 0) {
			long long now = mono_ns();

			logline("S %lld %s %ld %d\n", now, attempt, (long)getpid(), sig);
			logline("X %lld %s %ld sig%d\n", mono_ns(), attempt,
			    (long)getpid(), sig);
			return 128 + sig;
		}
	}
	logline("X %lld %s %ld ok\n", mono_ns(), attempt, (long)getpid());
	if (stop_ms < 0 && wfd >= 0) {
		int guarded = has_sibling(parent);

		kill(parent, SIGSTOP);
		logline("L %lld %s %ld %lld %d\n", mono_ns(), attempt,
		    (long)parent, -stop_ms, guarded);
	}
	(void)wfd;	/* held open until this process ends */
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 1) {
		printf("%lld\n", mono_ns());
		return fflush(stdout) == 0 ? 0 : 70;
	}
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "sec") == 0)
		return section(argv[2], atoll(argv[3]),
		    argc == 5 ? atoll(argv[4]) : 0);
	if (argc == 5 && strcmp(argv[1], "watchd") == 0)
		return watchd(argv[2], argv[3], atoll(argv[4]));
	fprintf(stderr, "usage: stamp | stamp sec LOG MS [STOP_MS] | "
	    "stamp watchd SOCK LOG SECONDS\n");
	return 64;
}
