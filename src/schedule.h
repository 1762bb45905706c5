/* schedule.h: rlock schedule's changes to a name's schedule (sched.lua). */
#ifndef RLOCK_SCHEDULE_H
#define RLOCK_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "err.h"
#include "lock.h"

/* What rlock schedule does to a name's schedule. */
enum sched_op {
	SCHED_DECLARE,	/* period_ms, grace_ms (0: half the period) */
	SCHED_PAUSE,	/* for_ms (0: until resumed), by */
	SCHED_RESUME,
	SCHED_REMOVE
};

/*
 * Run op on l's schedule, on every server (a majority must do it); a
 * declare of --cron takes the expression and zone from l->cron and
 * l->cron_tz (NULL: a schedule of --every).
 * Returns 1 done, 0 nothing to do (resume of a schedule not paused,
 * remove of none), -1 with e filled.  A pause sets *until_ms to when it
 * ends, by the server's clock (-1: until resumed).
 */
int	schedule_change(struct lock *l, enum sched_op op, int64_t period_ms,
	    int64_t grace_ms, int64_t for_ms, const char *by,
	    long long *until_ms, struct err *e);

/*
 * --cron EXPR in zone (NULL: the machine's): the expression's times around
 * now (seconds since the epoch), two before and two after, as ms joined by
 * "," into slots, and the gap around now (*gap_ms: between the time at or
 * before now and the next).  0, or -1 with why in err (a bad expression,
 * an unknown zone, no time within 5 years).
 */
int	schedule_cron_slots(const char *expr, const char *zone, time_t now,
	    char *slots, size_t len, int64_t *gap_ms, char *err,
	    size_t errlen);
/*
 * When a --cron schedule whose last slot was at slot_ms is next due (the
 * first of its times after it), and its grace by default (half the gap to
 * the time after that): 0, or -1.
 */
int	schedule_cron_due(const char *expr, const char *zone,
	    long long slot_ms, long long *due_ms, long long *grace_ms);

#endif
