/*
 * schedule.c: rlock schedule's changes to a name's schedule: declared
 * (its period and grace, kept until removed), paused for the whole fleet,
 * resumed, removed.  One script (sched.lua) on the lock's keys, so that
 * the change lands where the name's lock and schedule are (its Cluster
 * slot; each server of a quorum).
 */

#include <stdio.h>
#include <stdlib.h>

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
	rep = xcalloc(n, sizeof *rep);
	ok = quorum_script(l->q, NULL, &script_sched, KEY__COUNT, lock_keys(l),
	    SCHED__COUNT, args, rep, e);
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
