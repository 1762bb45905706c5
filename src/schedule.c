/*
 * schedule.c: rlock schedule's changes to a name's schedule: declared
 * (its period and grace, kept until removed), paused for the whole fleet,
 * resumed, removed.  One script (sched.lua) on the lock's keys, so that
 * the change lands where the name's lock and schedule are (its Cluster
 * slot; each server of a quorum).
 */

#include <stdio.h>
#include <stdlib.h>

#include "cron.h"
#include "lock-private.h"
#include "quorum.h"
#include "schedule.h"
#include "scripts.h"
#include "util.h"

static const char *const op_names[] = {
	[SCHED_DECLARE] = "declare",
	[SCHED_PAUSE] = "pause",
	[SCHED_RESUME] = "resume",
	[SCHED_REMOVE] = "remove",
};

/* sched.lua's reply: {code 0 or 1, until_ms}. */
static int
sched_shape(const struct redis_reply *r, void *arg)
{
	(void)arg;
	return lock_int_at(r, SCHEDULED_CODE, 0, 1) &&
	    lock_int_at(r, SCHEDULED_UNTIL_MS, -1, LOCK_REPLY_MAX_TIME);
}

int
schedule_change(struct lock *l, enum sched_op op, int64_t period_ms,
    int64_t grace_ms, int64_t for_ms, const char *by, long long *until_ms,
    struct err *e)
{
	struct redis_reply	**rep;
	const char		 *args[SCHED__COUNT];
	char			  period[24], grace[24], dur[24];
	int			  i, ok, done = 0, n = l->q->n;

	snprintf(period, sizeof period, "%lld", (long long)period_ms);
	snprintf(grace, sizeof grace, "%lld", (long long)grace_ms);
	snprintf(dur, sizeof dur, "%lld", (long long)for_ms);
	args[SCHED_OP] = op_names[op];
	args[SCHED_PERIOD_MS] = period;
	args[SCHED_GRACE_MS] = grace;
	args[SCHED_FOR_MS] = dur;
	args[SCHED_BY] = by != NULL ? by : "";
	args[SCHED_CRON] = l->cron != NULL ? l->cron : "";
	args[SCHED_CRON_TZ] = l->cron_tz != NULL ? l->cron_tz : "";
	rep = xcalloc(n, sizeof *rep);
	ok = quorum_run(l->q, &(struct quorum_req){ .script = &script_sched,
	    .nkeys = KEY__COUNT, .keys = lock_keys(l), .nargs = SCHED__COUNT,
	    .args = args }, rep, e);
	ok = quorum_check(l->q, rep, sched_shape, NULL, "the schedule script",
	    ok, e);
	if (until_ms != NULL)
		*until_ms = 0;
	for (i = 0; i < n; i++) {
		if (rep[i] == NULL || rep[i]->type != REDIS_T_ARRAY)
			continue;
		if (rep[i]->element[SCHEDULED_CODE]->integer == 1)
			done = 1;
		if (until_ms != NULL &&
		    rep[i]->element[SCHEDULED_UNTIL_MS]->integer != 0)
			*until_ms = rep[i]->element[SCHEDULED_UNTIL_MS]->integer;
	}
	quorum_free_replies(l->q, rep);
	free(rep);
	if (ok < quorum_majority(l->q))
		return -1;
	return done;
}

int
schedule_cron_slots(const char *expr, const char *zone, time_t now,
    char *slots, size_t len, int64_t *gap_ms, char *err, size_t errlen)
{
	struct cron	 c;
	time_t		 t[4];
	char		*saved, why[200];
	int		 rc = -1;

	if (cron_parse(expr, &c, why, sizeof why) == -1) {
		snprintf(err, errlen, "--cron '%.60s': %s", expr, why);
		return -1;
	}
	if (cron_zone_enter(zone, &saved) == -1) {
		snprintf(err, errlen, "--cron-tz %s is no time zone this "
		    "machine knows (see /usr/share/zoneinfo)", zone);
		cron_zone_leave(saved);
		return -1;
	}
	t[1] = cron_prev(&c, now);
	t[2] = cron_next(&c, now);
	t[0] = t[1] != (time_t)-1 ? cron_prev(&c, t[1] - 1) : (time_t)-1;
	t[3] = t[2] != (time_t)-1 ? cron_next(&c, t[2]) : (time_t)-1;
	cron_zone_leave(saved);
	if (t[1] == (time_t)-1 || t[2] == (time_t)-1)
		snprintf(err, errlen, "--cron '%.60s' has no time within five "
		    "years of now", expr);
	else {
		snprintf(slots, len, "%lld,%lld,%lld,%lld",
		    t[0] != (time_t)-1 ? (long long)t[0] * 1000 : 0LL,
		    (long long)t[1] * 1000, (long long)t[2] * 1000,
		    t[3] != (time_t)-1 ? (long long)t[3] * 1000 : 0LL);
		*gap_ms = ((int64_t)t[2] - t[1]) * 1000;
		rc = 0;
	}
	return rc;
}

int
schedule_cron_due(const char *expr, const char *zone, long long slot_ms,
    long long *due_ms, long long *grace_ms)
{
	struct cron	 c;
	time_t		 due, after;
	char		*saved, err[256];

	if (cron_parse(expr, &c, err, sizeof err) == -1)
		return -1;
	if (cron_zone_enter(zone, &saved) == -1) {
		cron_zone_leave(saved);
		return -1;
	}
	due = cron_next(&c, (time_t)(slot_ms / 1000));
	after = due != (time_t)-1 ? cron_next(&c, due) : (time_t)-1;
	cron_zone_leave(saved);
	if (due == (time_t)-1 || after == (time_t)-1)
		return -1;
	*due_ms = (long long)due * 1000;
	*grace_ms = ((long long)after - due) * 1000 / 2;
	return 0;
}
