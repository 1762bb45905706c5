/* log.c: one line per message on stderr; timestamps only when verbose. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "log.h"

static int		level = LOG_LEVEL_NORMAL;
/* The heartbeat thread logs too: keep each line whole. */
static pthread_mutex_t	lock = PTHREAD_MUTEX_INITIALIZER;

void
log_set_level(int l)
{
	level = l;
}

int
log_level(void)
{
	return level;
}

static void
emit(const char *tag, int stamp, const char *fmt, va_list ap)
{
	struct timespec	ts;
	struct tm	tm;
	char		when[32] = "";

	if (stamp) {
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	}
	pthread_mutex_lock(&lock);
	fputs("rlock: ", stderr);
	if (stamp)
		fprintf(stderr, "%s.%03ldZ ", when, ts.tv_nsec / 1000000);
	fputs(tag, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&lock);
}

void
log_error(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	emit("", level >= LOG_LEVEL_VERBOSE, fmt, ap);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;

	if (level < LOG_LEVEL_NORMAL)
		return;
	va_start(ap, fmt);
	emit("warning: ", level >= LOG_LEVEL_VERBOSE, fmt, ap);
	va_end(ap);
}

void
log_verbose(const char *fmt, ...)
{
	va_list	ap;

	if (level < LOG_LEVEL_VERBOSE)
		return;
	va_start(ap, fmt);
	emit("", 1, fmt, ap);
	va_end(ap);
}
