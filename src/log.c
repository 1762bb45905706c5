/* log.c: one line per message on stderr (timestamps when verbose), and syslog. */

/*
 * Errors and warnings go to stderr (warnings not with -q), progress only
 * with -v.  With --syslog, errors, warnings and the notable events
 * (log_notice: a lock taken after waiting, lost, forcibly released) also
 * go to syslog as "rlock[PID]", facility daemon, whatever -q and -v say:
 * cron has no terminal, and a quiet success should not fill the log.
 * With --json, each progress or event line (-v) is a JSON object instead,
 * for programs that follow an exec's events; errors and warnings stay the
 * one "rlock: ..." line they always are.  Whatever a message quotes (a
 * server's error, a URL, a key, a name) reaches the terminal and syslog
 * escaped (escape.c): one line, and nothing in it that steers a terminal.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include "escape.h"
#include "json.h"
#include "log.h"

static int		level = LOG_LEVEL_NORMAL;
static int		to_syslog;
static int		as_json;
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

void
log_set_json(int on)
{
	as_json = on;
}

/*
 * One JSON object a line on stderr: {"time":…,"level":…,"message":…}.
 * The message may hold anything a server said, cut at any byte by the
 * buffer it was formatted into: the writer keeps the line valid JSON.
 */
static void
emit_json(const char *level_name, const char *when, long ms, const char *msg)
{
	struct buf	b;
	struct json	j;
	char		stamp[64];

	snprintf(stamp, sizeof stamp, "%s.%03ldZ", when, ms);
	buf_init(&b);
	json_open(&j, &b, 0);
	json_object_begin(&j);
	json_key(&j, "time");
	json_str(&j, stamp);
	json_key(&j, "level");
	json_str(&j, level_name);
	json_key(&j, "message");
	json_str(&j, msg);
	json_object_end(&j);
	buf_adds(&b, "\n");
	fwrite(b.p, 1, b.len, stderr);
	buf_free(&b);
}

void
log_open_syslog(void)
{
	if (to_syslog)
		return;	/* --syslog is seen before parsing, and again after */
	openlog("rlock", LOG_PID, LOG_DAEMON);
	to_syslog = 1;
}

static void
emit(const char *tag, int stamp, int tty, int prio, const char *fmt,
    va_list ap)
{
	struct timespec	ts;
	struct tm	tm;
	struct buf	shown;
	char		when[32] = "", msg[1024];

	vsnprintf(msg, sizeof msg, fmt, ap);
	/*
	 * A message may quote what a server, a URL or a key said: shown with
	 * its control characters and bad UTF-8 escaped, on the terminal and
	 * in syslog alike (JSON lines escape it their own way).
	 */
	buf_init(&shown);
	escape_adds(&shown, msg);
	if (to_syslog && prio >= 0)
		syslog(prio, "%s%s", tag, shown.p);
	if (!tty) {
		buf_free(&shown);
		return;
	}
	if (stamp || as_json) {	/* (JSON lines always carry the time) */
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	}
	pthread_mutex_lock(&lock);
	/* Errors and warnings stay "rlock: ..." lines, JSON or not. */
	if (as_json && (prio == LOG_NOTICE || prio < 0)) {
		emit_json(prio == LOG_NOTICE ? "notice" : "info", when,
		    ts.tv_nsec / 1000000, msg);
		fflush(stderr);
		pthread_mutex_unlock(&lock);
		buf_free(&shown);
		return;
	}
	fputs("rlock: ", stderr);
	if (stamp)
		fprintf(stderr, "%s.%03ldZ ", when, ts.tv_nsec / 1000000);
	fprintf(stderr, "%s%s\n", tag, shown.p);
	fflush(stderr);
	pthread_mutex_unlock(&lock);
	buf_free(&shown);
}

void
log_error(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	emit("", level >= LOG_LEVEL_VERBOSE, 1, LOG_ERR, fmt, ap);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	emit("warning: ", level >= LOG_LEVEL_VERBOSE, level >= LOG_LEVEL_NORMAL,
	    LOG_WARNING, fmt, ap);
	va_end(ap);
}

void
log_notice(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	emit("", 1, level >= LOG_LEVEL_VERBOSE, LOG_NOTICE, fmt, ap);
	va_end(ap);
}

void
log_verbose(const char *fmt, ...)
{
	va_list	ap;

	if (level < LOG_LEVEL_VERBOSE)
		return;
	va_start(ap, fmt);
	emit("", 1, 1, -1, fmt, ap);
	va_end(ap);
}
