/*
 * stamp.c: tiny timing helper for bench/run (compiled by it into a temp dir).
 *
 *   stamp                       print CLOCK_MONOTONIC in nanoseconds
 *                               (system-wide, so stamps taken by different
 *                               processes can be subtracted)
 *   stamp rusage OUT CMD [ARG...]
 *                               run CMD, wait for it with wait4(2), write
 *                               "user_us sys_us maxrss_kib" to OUT and exit
 *                               with CMD's status (128+S if it died of
 *                               signal S).  CPU times have microsecond
 *                               resolution, unlike /usr/bin/time's %U/%S.
 *                               The figures are those of CMD and of every
 *                               descendant CMD waited for.
 *   stamp rounds DIR ROUNDS WARM SECS NAME CMD [ARG...] [++ NAME CMD ...]...
 *                               the interleaved exec cycle: WARM rounds
 *                               unrecorded, then ROUNDS rounds, each
 *                               running every command once (fork, execvp,
 *                               wait4: no shell), round r starting at the
 *                               r-th command so that the order rotates;
 *                               appends "wall_ns cpu_us" to DIR/NAME.runs
 *                               per run and the rounds done to DIR/rounds.
 *                               Stops after the round in which SECS have
 *                               passed.  Exits 1 if any run failed (each is
 *                               named on stderr), 0 otherwise.  A NAME
 *                               ending in "-cold" runs without the
 *                               directory $STAMP_COLD_DIR (rlock's TLS
 *                               sessions: every run a first run): it is
 *                               moved aside before, what the run left is
 *                               removed and it is put back after, untimed,
 *                               so that the other commands keep theirs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long
tv_us(struct timeval tv)
{
	return (long long)tv.tv_sec * 1000000LL + tv.tv_usec;
}

static int
rusage_run(const char *out, char **argv)
{
	struct rusage ru;
	FILE *f;
	pid_t pid;
	int st;

	if ((pid = fork()) < 0) {
		perror("stamp: fork");
		return 70;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "stamp: %s: %s\n", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	while (wait4(pid, &st, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("stamp: wait4");
			return 70;
		}
	}
	if ((f = fopen(out, "w")) == NULL) {
		perror(out);
		return 70;
	}
	fprintf(f, "%lld %lld %ld\n", tv_us(ru.ru_utime), tv_us(ru.ru_stime),
	    ru.ru_maxrss);
	if (fclose(f) != 0) {
		perror(out);
		return 70;
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

static long long
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * Run argv once with its output on /dev/null; its wall time (from before
 * the fork to after the wait, as hyperfine -N measures) and CPU time (its
 * own and its waited-for descendants') through *wall and *cpu.  Returns its
 * exit status (128+S for signal S), or -1 if it could not be started.
 */
static int
run_once(char **argv, long long *wall, long long *cpu)
{
	struct rusage ru;
	long long t0;
	pid_t pid;
	int st, fd;

	t0 = now_ns();
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		if ((fd = open("/dev/null", O_WRONLY)) >= 0)
			dup2(fd, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR)
			return -1;
	*wall = now_ns() - t0;
	*cpu = tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define MAXCMDS 32

/* Remove dir and its files (it has no subdirectories). */
static void
remove_dir(const char *dir)
{
	struct dirent *d;
	DIR *dp;

	if ((dp = opendir(dir)) == NULL)
		return;
	while ((d = readdir(dp)) != NULL)
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
			unlinkat(dirfd(dp), d->d_name, 0);
	closedir(dp);
	rmdir(dir);
}

/* Before (on 1) and after (on 0) a cold run: $STAMP_COLD_DIR aside. */
static void
cold(int before)
{
	const char *dir = getenv("STAMP_COLD_DIR");
	char aside[4096];

	if (dir == NULL || dir[0] == '\0')
		return;
	snprintf(aside, sizeof aside, "%s.stamp-warm", dir);
	if (before) {
		rename(dir, aside);
		return;
	}
	remove_dir(dir);
	rename(aside, dir);
}

static int
is_cold(const char *name)
{
	size_t n = strlen(name);

	return n >= 5 && strcmp(name + n - 5, "-cold") == 0;
}

static int
rounds_run(int argc, char **argv)
{
	FILE *out[MAXCMDS], *f;
	char **cmd[MAXCMDS], *name[MAXCMDS], path[4096];
	long long deadline, wall, cpu, rounds, warm, r;
	int i, j, n = 0, rc, bad = 0;

	rounds = atoll(argv[3]);
	warm = atoll(argv[4]);
	deadline = now_ns() + atoll(argv[5]) * 1000000000LL;
	/* Split NAME CMD... groups at "++", in place. */
	for (i = 6; i < argc; i++) {
		if (n == MAXCMDS || i + 1 >= argc || strcmp(argv[i + 1], "++") == 0) {
			fprintf(stderr, "stamp rounds: a NAME needs a command\n");
			return 64;
		}
		name[n] = argv[i];
		cmd[n] = argv + i + 1;
		for (j = i + 1; j < argc && strcmp(argv[j], "++") != 0; j++)
			;
		argv[j < argc ? j : argc] = NULL;
		snprintf(path, sizeof path, "%s/%s.runs", argv[2], name[n]);
		if ((out[n] = fopen(path, "a")) == NULL) {
			perror(path);
			return 70;
		}
		n++;
		i = j;
	}
	if (n == 0)
		return 64;
	for (r = -warm; r < rounds && now_ns() < deadline; r++) {
		for (j = 0; j < n; j++) {
			i = (int)(((r % n) + n + j) % n);
			if (is_cold(name[i]))
				cold(1);
			rc = run_once(cmd[i], &wall, &cpu);
			if (is_cold(name[i]))
				cold(0);
			if (rc != 0) {
				fprintf(stderr, "stamp rounds: %s, round %lld: %s %d\n",
				    name[i], r, rc < 0 ? "not started" : "exit", rc);
				bad++;
			} else if (r >= 0)
				fprintf(out[i], "%lld %lld\n", wall, cpu);
		}
	}
	for (i = 0; i < n; i++)
		fclose(out[i]);
	snprintf(path, sizeof path, "%s/rounds", argv[2]);
	if ((f = fopen(path, "w")) != NULL) {
		fprintf(f, "%lld\n", r < 0 ? 0 : r);
		fclose(f);
	}
	return bad ? 1 : 0;
}

int
main(int argc, char **argv)
{
	struct timespec ts;

	if (argc >= 4 && strcmp(argv[1], "rusage") == 0)
		return rusage_run(argv[2], argv + 3);
	if (argc >= 8 && strcmp(argv[1], "rounds") == 0)
		return rounds_run(argc, argv);
	if (argc != 1) {
		fprintf(stderr, "usage: stamp | stamp rusage OUT CMD [ARG...] | "
		    "stamp rounds DIR ROUNDS WARM SECS NAME CMD... [++ NAME CMD...]...\n");
		return 64;
	}
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
		perror("stamp: clock_gettime");
		return 70;
	}
	printf("%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	return fflush(stdout) == 0 ? 0 : 70;
}
