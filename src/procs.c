/* procs.c: every process exec's command started, found in /proc. */
#include "config.h"

/*
 * A process group is what a signal reaches at once, but a process can
 * leave it (setsid: a daemon, a job-control shell), and what the command
 * started can outlive the command.  rlock makes itself the child
 * subreaper, so that whatever the command leaves behind is reparented to
 * rlock instead of init: then every process the command started is a
 * descendant of rlock, found by walking the parent links that /proc
 * gives, whatever its group or session.
 *
 * A pid read from /proc may be freed and reused before it is signalled.
 * rlock's own children cannot be (their pids are ours until reaped); for
 * the others, procs_kill opens a pidfd and checks that the process it
 * names still started when the one found did, and signals through it.
 */

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procs.h"
#include "util.h"

/* One line of /proc/PID/stat, what of it we need. */
struct stat_line {
	pid_t		pid, ppid, pgrp;
	char		state;
	uint64_t	start;
};

int
procs_exited(pid_t pid)
{
	siginfo_t	si;

	memset(&si, 0, sizeof si);
	if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1)
		return errno == ECHILD;
	return si.si_pid == pid;
}

int
procs_adopt(void)
{
#if defined(HAVE_PRCTL) && defined(PR_SET_CHILD_SUBREAPER)
	return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0 ? 0 : -1;
#else
	return -1;
#endif
}

/*
 * Parse "PID (COMM) S PPID PGRP ..." up to the start time, field 22.  The
 * command name may hold spaces and parentheses: it ends at the last ')'.
 */
static int
parse_stat(const char *s, struct stat_line *st)
{
	const char		*p = strrchr(s, ')');
	unsigned long long	 v;
	int			 field;
	char			*end;

	if (p == NULL || p[1] != ' ' || p[2] == '\0')
		return -1;
	st->pid = (pid_t)strtol(s, NULL, 10);
	st->state = p[2];
	p += 3;
	for (field = 4; field <= 22; field++) {
		while (*p == ' ')
			p++;
		v = strtoull(p, &end, 10);
		if (end == p && *p != '-')
			return -1;
		if (*p == '-')
			v = strtoull(p + 1, &end, 10);
		if (field == 4)
			st->ppid = (pid_t)v;
		else if (field == 5)
			st->pgrp = (pid_t)v;
		else if (field == 22)
			st->start = v;
		p = end;
	}
	return 0;
}

static int
read_stat(pid_t pid, struct stat_line *st)
{
	char	path[64], buf[1024];
	ssize_t	n;
	int	fd;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	do
		n = read(fd, buf, sizeof buf - 1);
	while (n == -1 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return parse_stat(buf, st);
}

static int
by_pid(const void *a, const void *b)
{
	pid_t	x = ((const struct stat_line *)a)->pid;
	pid_t	y = ((const struct stat_line *)b)->pid;

	return x < y ? -1 : x > y;
}

static int
is_dead(char state)
{
	return state == 'Z' || state == 'X' || state == 'x';
}

/*
 * Every process of the system, read from /proc, for the kernels without
 * the children files: their descendants of ours found by parent links.
 * A whole walk costs a millisecond or more of CPU on a busy machine.
 */
static size_t
all_descendants(struct stat_line **out)
{
	struct stat_line	*all = NULL, st, key, *found;
	struct dirent		*de;
	DIR			*d;
	size_t			 n = 0, cap = 0, i, *up;
	pid_t			 self = getpid();
	char			*in = NULL;
	int			 grew;

	*out = NULL;
	if ((d = opendir("/proc")) == NULL)
		return SIZE_MAX;
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (read_stat((pid_t)strtol(de->d_name, NULL, 10), &st) == -1)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			all = xrealloc(all, cap * sizeof *all);
		}
		all[n++] = st;
	}
	closedir(d);
	/*
	 * The descendants: grown from our children, a generation or more a
	 * pass, each process's parent found by a binary search.
	 */
	qsort(all, n, sizeof *all, by_pid);
	up = xcalloc(n > 0 ? n : 1, sizeof *up);
	for (i = 0; i < n; i++) {
		key.pid = all[i].ppid;
		found = n > 0 ? bsearch(&key, all, n, sizeof *all, by_pid) : NULL;
		up[i] = found != NULL ? (size_t)(found - all) : SIZE_MAX;
	}
	in = xcalloc(n > 0 ? n : 1, 1);
	do {
		grew = 0;
		for (i = 0; i < n; i++)
			if (!in[i] && (all[i].ppid == self ||
			    (up[i] != SIZE_MAX && in[up[i]])))
				in[i] = grew = 1;
	} while (grew);
	for (i = 0, cap = 0; i < n; i++)
		if (in[i])
			all[cap++] = all[i];
	free(in);
	free(up);
	*out = all;
	return cap;
}

/*
 * Append the children of pid, from each of its threads' children file,
 * to *list (n of cap).  0, or -1 where the kernel has no such files.
 */
static int
add_children(pid_t pid, struct stat_line **list, size_t *n, size_t *cap)
{
	char		 path[320], buf[4096], *p, *end;
	struct dirent	*de;
	struct stat_line st;
	DIR		*d;
	ssize_t		 r;
	long		 child;
	int		 fd;

	snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
	if ((d = opendir(path)) == NULL)
		return errno == ENOENT ? 0 : -1;	/* gone meanwhile */
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof path, "/proc/%ld/task/%s/children",
		    (long)pid, de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
			if (errno == ENOENT && pid == getpid()) {
				closedir(d);
				return -1;	/* no CONFIG_PROC_CHILDREN */
			}
			continue;
		}
		do
			r = read(fd, buf, sizeof buf - 1);
		while (r == -1 && errno == EINTR);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		for (p = buf; (child = strtol(p, &end, 10)), end != p; p = end) {
			if (read_stat((pid_t)child, &st) == -1)
				continue;
			if (*n == *cap) {
				*cap = *cap ? *cap * 2 : 16;
				*list = xrealloc(*list, *cap * sizeof **list);
			}
			(*list)[(*n)++] = st;
		}
	}
	closedir(d);
	return 0;
}

/* Is pid one of own[0..nown)? */
static int
is_own(pid_t pid, const pid_t *own, size_t nown)
{
	size_t	i;

	for (i = 0; i < nown; i++)
		if (own[i] == pid)
			return 1;
	return 0;
}

int
procs_find(struct procs *ps, pid_t keep, const pid_t *own, size_t nown)
{
	struct stat_line	*all = NULL;
	size_t			 n = 0, cap = 0, i;
	pid_t			 self = getpid();

	ps->n = 0;
	/*
	 * Our descendants, generation by generation, from the children
	 * files: a few small reads, where the whole of /proc is hundreds.
	 * What left its parent was reparented to us (the subreaper).
	 */
	if (add_children(self, &all, &n, &cap) == 0) {
		for (i = 0; i < n; i++)
			if (!is_dead(all[i].state))
				add_children(all[i].pid, &all, &n, &cap);
	} else {
		free(all);
		if ((n = all_descendants(&all)) == SIZE_MAX)
			return -1;
	}
	for (i = 0; i < n; i++) {
		if (is_own(all[i].pid, own, nown) || all[i].pid == self)
			continue;
		if (is_dead(all[i].state)) {
			/* Adopted and gone: ours to reap, now. */
			if (all[i].ppid == self && all[i].pid != keep)
				waitpid(all[i].pid, NULL, WNOHANG);
			continue;
		}
		if (ps->n == ps->cap) {
			ps->cap = ps->cap ? ps->cap * 2 : 16;
			ps->p = xrealloc(ps->p, ps->cap * sizeof *ps->p);
		}
		ps->p[ps->n].pid = all[i].pid;
		ps->p[ps->n].pgrp = all[i].pgrp;
		ps->p[ps->n].start = all[i].start;
		ps->n++;
	}
	free(all);
	return (int)ps->n;
}

int
procs_other_children(pid_t keep, const pid_t *own, size_t nown)
{
	char	path[64], buf[4096], *p, *end;
	ssize_t	n;
	long	pid;
	int	fd;

	/* The threads' lists: ours is the main thread's, which forks. */
	snprintf(path, sizeof path, "/proc/self/task/%ld/children",
	    (long)getpid());
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 1;
	do
		n = read(fd, buf, sizeof buf - 1);
	while (n == -1 && errno == EINTR);
	close(fd);
	if (n < 0 || n == sizeof buf - 1)
		return 1;
	buf[n] = '\0';
	for (p = buf;; p = end) {
		pid = strtol(p, &end, 10);
		if (end == p)
			return 0;
		if (pid != keep && !is_own((pid_t)pid, own, nown))
			return 1;
	}
}

void
procs_kill(const struct proc *p, int sig)
{
	struct stat_line	st;
#ifdef SYS_pidfd_open
	int			fd;

	if ((fd = (int)syscall(SYS_pidfd_open, p->pid, 0)) >= 0) {
		/* The pidfd names one process for good: is it ours? */
		if (read_stat(p->pid, &st) == 0 && st.start == p->start)
			syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
		close(fd);
		return;
	}
	if (errno == ESRCH)
		return;
#endif
	/* No pidfds: the check and the kill are as close as they can be. */
	if (read_stat(p->pid, &st) == 0 && st.start == p->start)
		kill(p->pid, sig);
}

const char *
procs_format(const struct procs *ps, char *buf, size_t len)
{
	size_t	i, at;
	int	w;

	w = snprintf(buf, len, "%s", ps->n == 1 ? "pid" : "pids");
	at = w > 0 ? (size_t)w : 0;
	for (i = 0; i < ps->n && at < len; i++) {
		w = snprintf(buf + at, len - at, " %ld", (long)ps->p[i].pid);
		if (w < 0 || (size_t)w >= len - at || at + w + 5 > len) {
			snprintf(buf + at, len - at, " ...");
			break;
		}
		at += (size_t)w;
	}
	return buf;
}

void
procs_free(struct procs *ps)
{
	free(ps->p);
	memset(ps, 0, sizeof *ps);
}
