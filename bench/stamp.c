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
 */
#define _GNU_SOURCE
#include <errno.h>
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

int
main(int argc, char **argv)
{
	struct timespec ts;

	if (argc >= 4 && strcmp(argv[1], "rusage") == 0)
		return rusage_run(argv[2], argv + 3);
	if (argc != 1) {
		fprintf(stderr, "usage: stamp | stamp rusage OUT CMD [ARG...]\n");
		return 64;
	}
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
		perror("stamp: clock_gettime");
		return 70;
	}
	printf("%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	return fflush(stdout) == 0 ? 0 : 70;
}
