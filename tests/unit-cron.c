/* unit-cron.c: TAP unit tests for cron.c: crontab(5) expressions, stepped. */

/*
 * As unit.c: one program, run by make check, printing TAP (the plan
 * first, so the results are kept until the end).  Times are worked out in
 * named zones (UTC, and Europe/Paris for its daylight-saving changes),
 * never the machine's own.  Exits 1 if any check fails.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cron.h"

static int	tests, failures;
static char	results[1 << 16];
static size_t	used;

static void
report(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
report(int ok, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	tests++;
	if (!ok)
		failures++;
	n = snprintf(results + used, sizeof results - used, "%s %d - ",
	    ok ? "ok" : "not ok", tests);
	used += n > 0 ? (size_t)n : 0;
	va_start(ap, fmt);
	n = vsnprintf(results + used, sizeof results - used, fmt, ap);
	va_end(ap);
	used += n > 0 ? (size_t)n : 0;
	if (used + 1 < sizeof results)
		results[used++] = '\n';
	if (used >= sizeof results)
		used = sizeof results - 1;
}

#define CHECK(cond, ...)	report((cond) != 0, __VA_ARGS__)

/* A local time in the current zone, as time_t. */
static time_t
at(int y, int mo, int d, int h, int mi)
{
	struct tm	tm;

	memset(&tm, 0, sizeof tm);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_isdst = -1;
	return mktime(&tm);
}

/* expr's next time after the local time given, as "YYYY-MM-DD HH:MM". */
static const char *
next_of(const char *expr, time_t t, int prev)
{
	static char	buf[64];
	struct cron	c;
	struct tm	tm;
	char		err[256];
	time_t		n;

	if (cron_parse(expr, &c, err, sizeof err) == -1)
		return "parse error";
	n = prev ? cron_prev(&c, t) : cron_next(&c, t);
	if (n == (time_t)-1 || localtime_r(&n, &tm) == NULL)
		return "none";
	strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
	return buf;
}

static void
test_parse(void)
{
	static const char *const good[] = {
		"* * * * *", "*/5 * * * *", "0 9-17 * * 1-5", "0,30 * * * *",
		"15 3 1 jan *", "0 0 * * SUN", "0 0 * * 7", "1-59/2 * * * *",
		"@hourly", "@daily", "@weekly", "@monthly", "@yearly",
		"  0 0 * * *  ", "0 0 29 2 *", "0 0 * * mon-fri",
	};
	static const struct {
		const char	*expr, *why;
	} bad[] = {
		{ "", "has 0 fields" },
		{ "* * * *", "has 4 fields" },
		{ "* * * * * *", "more than 5 fields" },
		{ "60 * * * *", "minute 60 is out of range" },
		{ "* 24 * * *", "hour 24 is out of range" },
		{ "* * 0 * *", "day of the month 0 is out of range" },
		{ "* * * 13 *", "month 13 is out of range" },
		{ "* * * * 8", "day of the week 8 is out of range" },
		{ "*/0 * * * *", "cannot read the minute field" },
		{ "5-1 * * * *", "minute 5-1 is out of range" },
		{ "x * * * *", "cannot read the minute field" },
		{ "1, * * * *", "cannot read the minute field" },
		{ "@often", "unknown '@often'" },
		{ "* * * foo *", "cannot read the month field" },
	};
	struct cron	c;
	char		err[256];
	size_t		i;

	for (i = 0; i < sizeof good / sizeof *good; i++)
		CHECK(cron_parse(good[i], &c, err, sizeof err) == 0,
		    "parse '%s'", good[i]);
	for (i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		CHECK(cron_parse(bad[i].expr, &c, err, sizeof err) == -1 &&
		    strstr(err, bad[i].why) != NULL,
		    "refuse '%s': %s (said: %s)", bad[i].expr, bad[i].why, err);
	}
}

static void
test_next_utc(void)
{
	static const struct {
		const char	*expr;
		int		 prev;
		const char	*want;
	} cases[] = {
		/* From Wednesday 2026-12-02 13:47 UTC. */
		{ "* * * * *", 0, "2026-12-02 13:48" },
		{ "* * * * *", 1, "2026-12-02 13:47" },
		{ "*/5 * * * *", 0, "2026-12-02 13:50" },
		{ "*/5 * * * *", 1, "2026-12-02 13:45" },
		{ "0 9-17 * * 1-5", 0, "2026-12-02 14:00" },
		{ "0 9-17 * * 1-5", 1, "2026-12-02 13:00" },
		/* Weekdays only: Saturday's next is Monday's first. */
		{ "0 17 * * 6", 0, "2026-12-05 17:00" },
		{ "0 17 * * sat", 1, "2026-11-28 17:00" },
		{ "0 0 1 jan *", 0, "2027-01-01 00:00" },
		{ "0 0 29 2 *", 0, "2028-02-29 00:00" },
		{ "0 0 29 2 *", 1, "2024-02-29 00:00" },
		{ "@monthly", 1, "2026-12-01 00:00" },
		/* Both days set: either matches (the 15th, or a Friday). */
		{ "0 12 15 * 5", 0, "2026-12-04 12:00" },
		{ "0 12 15 * 5", 1, "2026-11-27 12:00" },
		/* A day set with the week's day "*": the 31st only. */
		{ "0 0 31 * *", 0, "2026-12-31 00:00" },
		{ "0 0 31 * *", 1, "2026-10-31 00:00" },
	};
	char		*saved;
	time_t		 t;
	size_t		 i;

	CHECK(cron_zone_enter("UTC", &saved) == 0, "zone UTC");
	t = at(2026, 12, 2, 13, 47) + 20;
	for (i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *got = next_of(cases[i].expr, t, cases[i].prev);

		CHECK(strcmp(got, cases[i].want) == 0, "%s '%s' from "
		    "2026-12-02 13:47:20 UTC: %s (got %s)", cases[i].prev ?
		    "prev" : "next", cases[i].expr, cases[i].want, got);
	}
	/* A time of the expression is its own prev, never its own next. */
	t = at(2026, 12, 2, 14, 0);
	CHECK(strcmp(next_of("0 * * * *", t, 1), "2026-12-02 14:00") == 0,
	    "prev of a time of the expression is itself");
	CHECK(strcmp(next_of("0 * * * *", t, 0), "2026-12-02 15:00") == 0,
	    "next of a time of the expression is the one after");
	cron_zone_leave(saved);
}

static void
test_zone(void)
{
	char	*saved;
	time_t	 t;

	CHECK(cron_zone_enter("No/Such_Zone", &saved) == -1,
	    "a zone this machine does not know is refused");
	cron_zone_leave(saved);
	CHECK(cron_zone_enter("../../etc/passwd", &saved) == -1,
	    "a zone that is a path is refused");
	cron_zone_leave(saved);
	if (cron_zone_enter("Europe/Paris", &saved) == -1) {
		report(1, "# SKIP no Europe/Paris zone file");
		cron_zone_leave(saved);
		return;
	}
	/* 2026-03-29: 02:00 does not exist in Paris (clocks go to 03:00). */
	t = at(2026, 3, 29, 1, 30);
	CHECK(strcmp(next_of("30 2 * * *", t, 0), "2026-03-30 02:30") == 0,
	    "a time the spring change skips is no slot that day: %s",
	    next_of("30 2 * * *", t, 0));
	t = at(2026, 3, 28, 12, 0);
	CHECK(strcmp(next_of("0 9 * * *", t, 0), "2026-03-29 09:00") == 0,
	    "09:00 local across the change: %s", next_of("0 9 * * *", t, 0));
	{
		struct cron	c;
		char		err[128];
		time_t		a, b;

		cron_parse("0 9 * * *", &c, err, sizeof err);
		a = cron_next(&c, at(2026, 3, 27, 12, 0));
		b = cron_next(&c, a);
		CHECK(b - a == 23 * 3600, "the day of the change has 23 hours "
		    "between two 09:00 slots (%ld s)", (long)(b - a));
	}
	cron_zone_leave(saved);
	CHECK(getenv("TZ") == NULL || strcmp(getenv("TZ"), "Europe/Paris") != 0,
	    "TZ is put back as it was");
}

int
main(void)
{
	unsetenv("TZ");
	test_parse();
	test_next_utc();
	test_zone();
	printf("1..%d\n%.*s", tests, (int)used, results);
	return failures > 0;
}
