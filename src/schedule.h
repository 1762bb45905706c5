/* schedule.h: rlock schedule's changes to a name's schedule (sched.lua). */
#ifndef RLOCK_SCHEDULE_H
#define RLOCK_SCHEDULE_H

#include <stdint.h>

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
 * Run op on l's schedule, on every server (a majority must do it).
 * Returns 1 done, 0 nothing to do (resume of a schedule not paused,
 * remove of none), -1 with e filled.  A pause sets *until_ms to when it
 * ends, by the server's clock (-1: until resumed).
 */
int	schedule_change(struct lock *l, enum sched_op op, int64_t period_ms,
	    int64_t grace_ms, int64_t for_ms, const char *by,
	    long long *until_ms, struct err *e);

#endif
