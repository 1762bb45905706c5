/*
 * cron.c: crontab(5) expressions, parsed and stepped through, for exec
 * --cron: the slots of a schedule are the expression's times.  No
 * dependency: the five fields are sets of small numbers, and the next (or
 * previous) time is found by moving a broken-down local time field by
 * field, as mktime(3) normalises it (so a time that a daylight-saving
 * change skips is never one of the slots; one it repeats is its first).
 */

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cron.h"

/* How far a search goes: five years of days (a 29 February's is four). */
#define CRON_SEARCH_STEPS	(5 * 366 * 24 + 60 * 24 * 2)

static const char *const month_names[] = {
	"jan", "feb", "mar", "apr", "may", "jun",
	"jul", "aug", "sep", "oct", "nov", "dec",
};
static const char *const day_names[] = {
	"sun", "mon", "tue", "wed", "thu", "fri", "sat",
};

static const struct {
	const char	*name;
	const char	*expr;
} macros[] = {
	{ "@yearly", "0 0 1 1 *" },
	{ "@annually", "0 0 1 1 *" },
	{ "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" },
	{ "@daily", "0 0 * * *" },
	{ "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

static const struct field {
	const char		*name;
	int			 lo, hi;
	const char *const	*names;	/* names[i] is lo + i */
	int			 nnames;
} fields[5] = {
	{ "minute", 0, 59, NULL, 0 },
	{ "hour", 0, 23, NULL, 0 },
	{ "day of the month", 1, 31, NULL, 0 },
	{ "month", 1, 12, month_names, 12 },
	{ "day of the week", 0, 7, day_names, 7 },
};

/* A number or a name of field f at *p: its value, *p moved past; -1. */
static int
value(const struct field *f, const char **p)
{
	const char	*s = *p;
	long		 v;
	char		*end;
	int		 i;

	if (isdigit((unsigned char)*s)) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno != 0 || end - s > 4)
			return -1;
		*p = end;
		return (int)v;
	}
	for (i = 0; i < f->nnames; i++)
		if (strncasecmp(s, f->names[i], 3) == 0 &&
		    !isalpha((unsigned char)s[3])) {
			*p = s + 3;
			return f->lo + i;
		}
	return -1;
}

/*
 * One field's text (up to a blank) into *set (bit v: value v); *star:
 * whether it was "*" (alone, or "*" with a step).  0, or -1 with err.
 */
static int
parse_field(const struct field *f, const char *s, size_t n, uint64_t *set,
    int *star, char *err, size_t len)
{
	const char	*p = s, *end = s + n;
	int		 a, b, step, v;

	*set = 0;
	*star = 0;
	while (p < end) {
		if (*p == '*') {
			a = f->lo;
			b = f->hi == 7 ? 6 : f->hi;
			p++;
			*star = 1;
		} else {
			if ((a = value(f, &p)) < 0)
				goto bad;
			b = a;
			if (p < end && *p == '-') {
				p++;
				if ((b = value(f, &p)) < 0)
					goto bad;
			}
		}
		step = 1;
		if (p < end && *p == '/') {
			p++;
			if (!isdigit((unsigned char)*p) ||
			    (step = value(f, &p)) <= 0)
				goto bad;
		}
		if (a < f->lo || b > f->hi || a > b) {
			snprintf(err, len, "%s %.*s is out of range: give %d "
			    "to %d", f->name, (int)n, s, f->lo, f->hi);
			return -1;
		}
		for (v = a; v <= b; v += step)
			*set |= 1ULL << (f->hi == 7 && v == 7 ? 0 : v);
		if (p < end && *p == ',' && p + 1 < end)
			p++;
		else if (p < end)
			goto bad;
	}
	if (*set != 0)
		return 0;
bad:
	snprintf(err, len, "cannot read the %s field '%.*s': give *, N, N-M, "
	    "*/S, N-M/S or a list of them joined by ','", f->name, (int)n, s);
	return -1;
}

int
cron_parse(const char *expr, struct cron *c, char *err, size_t len)
{
	const char	*p = expr, *start;
	uint64_t	 set[5];
	size_t		 i;
	int		 star[5], k;

	memset(c, 0, sizeof *c);
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '@') {
		for (i = 0; i < sizeof macros / sizeof *macros; i++)
			if (strcasecmp(p, macros[i].name) == 0)
				return cron_parse(macros[i].expr, c, err, len);
		snprintf(err, len, "unknown '%.20s': give @yearly, @annually, "
		    "@monthly, @weekly, @daily, @midnight or @hourly", p);
		return -1;
	}
	for (k = 0; k < 5; k++) {
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '\0') {
			snprintf(err, len, "'%.60s' has %d field%s, not 5 "
			    "(minute hour day-of-month month day-of-week)",
			    expr, k, k == 1 ? "" : "s");
			return -1;
		}
		start = p;
		while (*p != '\0' && !isspace((unsigned char)*p))
			p++;
		if (parse_field(&fields[k], start, (size_t)(p - start),
		    &set[k], &star[k], err, len) == -1)
			return -1;
	}
	while (isspace((unsigned char)*p))
		p++;
	if (*p != '\0') {
		snprintf(err, len, "'%.60s' has more than 5 fields (minute hour "
		    "day-of-month month day-of-week)", expr);
		return -1;
	}
	c->minute = set[0];
	c->hour = (uint32_t)set[1];
	c->mday = (uint32_t)set[2];
	c->month = (uint32_t)set[3];
	c->wday = (uint32_t)set[4];
	c->mday_star = star[2];
	c->wday_star = star[4];
	return 0;
}

/* Does the day of tm match (crontab(5): either day field, if both set)? */
static int
day_matches(const struct cron *c, const struct tm *tm)
{
	int	m = (c->mday >> tm->tm_mday) & 1, w = (c->wday >> tm->tm_wday) & 1;

	if (c->mday_star || c->wday_star)
		return m && w;
	return m || w;
}

/*
 * Step from t (after it: dir 1; at or before it: dir -1) to the nearest
 * time of c, a field at a time: a month that does not match moves to the
 * first (last) minute of the next (previous) month, and so on down.
 */
static time_t
step(const struct cron *c, time_t t, int dir)
{
	struct tm	tm;
	time_t		at;
	long		n;

	/* The first candidate: the next whole minute, or this one. */
	at = dir > 0 ? t - t % 60 + 60 : t - t % 60;
	for (n = 0; n < CRON_SEARCH_STEPS; n++) {
		if (localtime_r(&at, &tm) == NULL)
			return (time_t)-1;
		if (!((c->month >> (tm.tm_mon + 1)) & 1)) {
			if (dir > 0) {
				tm.tm_mon++;
				tm.tm_mday = 1;
				tm.tm_hour = tm.tm_min = 0;
			} else {
				tm.tm_mday = 0;	/* the last of the month before */
				tm.tm_hour = 23;
				tm.tm_min = 59;
			}
		} else if (!day_matches(c, &tm)) {
			tm.tm_mday += dir;
			tm.tm_hour = dir > 0 ? 0 : 23;
			tm.tm_min = dir > 0 ? 0 : 59;
		} else if (!((c->hour >> tm.tm_hour) & 1)) {
			tm.tm_hour += dir;
			tm.tm_min = dir > 0 ? 0 : 59;
		} else if (!((c->minute >> tm.tm_min) & 1)) {
			tm.tm_min += dir;
		} else
			return at;
		tm.tm_sec = 0;
		tm.tm_isdst = -1;
		{
			time_t	next = mktime(&tm);

			/*
			 * A daylight-saving change can send mktime back to
			 * where it was (or before): go on by a minute.
			 */
			if (next == (time_t)-1)
				return (time_t)-1;
			if (dir > 0 ? next <= at : next >= at)
				next = at + 60 * dir;
			at = next;
		}
	}
	return (time_t)-1;
}

time_t
cron_next(const struct cron *c, time_t t)
{
	return step(c, t, 1);
}

time_t
cron_prev(const struct cron *c, time_t t)
{
	return step(c, t, -1);
}

int
cron_zone_enter(const char *zone, char **saved)
{
	const char	*old = getenv("TZ");
	char		 path[512];
	struct stat	 sb;

	*saved = old != NULL ? strdup(old) : NULL;
	if (zone == NULL || *zone == '\0')
		return 0;
	/* A name this machine's zone files know (never a path of ours). */
	if (zone[0] == '/' || strstr(zone, "..") != NULL ||
	    (size_t)snprintf(path, sizeof path, "/usr/share/zoneinfo/%s",
	    zone) >= sizeof path || stat(path, &sb) == -1 ||
	    !S_ISREG(sb.st_mode))
		return -1;
	setenv("TZ", zone, 1);
	tzset();
	return 0;
}

void
cron_zone_leave(char *saved)
{
	if (saved != NULL) {
		setenv("TZ", saved, 1);
		free(saved);
	} else
		unsetenv("TZ");
	tzset();
}
