/* cron.h: crontab(5) schedule expressions, for exec --cron. */
#ifndef RLOCK_CRON_H
#define RLOCK_CRON_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * A parsed expression: the five fields of crontab(5), each a set of the
 * values it allows (bit v: value v), and whether the day of the month and
 * the day of the week were both restricted (then a day matches if either
 * does, as cron has it).
 */
struct cron {
	uint64_t	minute;		/* 0-59 */
	uint32_t	hour;		/* 0-23 */
	uint32_t	mday;		/* 1-31 */
	uint32_t	month;		/* 1-12 */
	uint32_t	wday;		/* 0-6, Sunday 0 (7 is taken as 0) */
	int		mday_star, wday_star;
};

/*
 * Parse expr: five fields (minute hour day-of-month month day-of-week),
 * each "*", a number, a range "a-b", a step "*\/s" or "a-b/s", or a list
 * of those joined by ","; months and days may be given by their first
 * three letters (jan, mon), any case; or one of @yearly, @annually,
 * @monthly, @weekly, @daily, @midnight, @hourly.  0, or -1 with why (one
 * line: what is wrong, where) in err.
 */
int	cron_parse(const char *expr, struct cron *c, char *err, size_t len);

/*
 * The first time of c after t (seconds since the epoch), in the local time
 * zone (TZ, as localtime_r(3) has it); (time_t)-1 if none within 5 years.
 */
time_t	cron_next(const struct cron *c, time_t t);
/* The last time of c at or before t; (time_t)-1 if none within 5 years. */
time_t	cron_prev(const struct cron *c, time_t t);

/*
 * Run the two above in zone (a TZ value, e.g. "Europe/Paris"; NULL or "":
 * the machine's own), then put TZ back as it was: 0, or -1 if zone is not
 * a zone this machine knows (no file under /usr/share/zoneinfo).
 */
int	cron_zone_enter(const char *zone, char **saved);
void	cron_zone_leave(char *saved);

#endif
