/*
 * lock-wait.c: how a waiter waits between attempts: its blocking reads
 * (the wake lists, a chunk at a time, renewing its place), the pauses
 * after an error, and riding through a server that is away until --wait
 * (or, for exec -n --every, --timeout) runs out.  The attempts themselves
 * and the loop that makes them are in lock.c.
 */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"
#include "lock.h"
#include "lock-private.h"
#include "log.h"
#include "scripts.h"
#include "signals.h"
#include "util.h"

/*
 * What is wrong when server i answered a waiter's BLPOP with the error
 * code: for a wrong type, which of the two lists it is and what it holds
 * (TYPE); into l->wait_why, never the server's own text.
 */
static void
describe_wait_error(struct lock *l, int i, const char *code)
{
	struct redis_reply	*rr;
	struct err		 e;
	const char		*keys[2], *key = l->wake_key;
	char			 type[32] = "";
	int			 k;

	keys[0] = l->wake_key;
	keys[1] = lock_own_wake(l);
	for (k = 0; k < 2 && strcmp(code, "WRONGTYPE") == 0; k++) {
		rr = quorum_callv(l->q, i, &e, "TYPE", keys[k], NULL);
		/* A module's type name too, if it is a plain word. */
		if (rr != NULL && rr->type == REDIS_T_STATUS &&
		    strcmp(rr->str, "list") != 0 &&
		    strcmp(rr->str, "none") != 0 && rr->len < 24 &&
		    strspn(rr->str, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == rr->len) {
			snprintf(type, sizeof type, "a %s", rr->str);
			key = keys[k];
			k = 2;
		}
		redis_reply_free(rr);
	}
	if (strcmp(code, "WRONGTYPE") == 0)
		snprintf(l->wait_why, sizeof l->wait_why, "%s: %s holds %s, not "
		    "a list, so a waiter cannot block on it for %s; delete it "
		    "with rlock release --force %s (or redis-cli DEL '%s')",
		    l->q->urls[i].display, key, type[0] != '\0' ? type :
		    "a value of another type", l->name, l->name, key);
	else
		snprintf(l->wait_why, sizeof l->wait_why, "%s: BLPOP on %s was "
		    "refused (%s), so a waiter cannot block on it for %s; run "
		    "rlock doctor to see what this server allows",
		    l->q->urls[i].display, key, code, l->name);
}

/*
 * After a round that blocked on the wake lists: did the BLPOP answer an
 * error?  Counted in a row, and said once (with -v) as it happens.
 */
void
lock_note_wait(struct lock *l)
{
	const char	*code;
	int		 i;

	if ((i = quorum_wait_error(l->q, &code)) < 0) {
		l->wait_errors = 0;
		return;
	}
	if (l->wait_errors++ == 0 && l->wait_why[0] == '\0') {
		describe_wait_error(l, i, code);
		log_verbose("%s; waiting with a backoff instead", l->wait_why);
	}
}

/*
 * How long the next attempt may block first.  The lock's validity counts
 * from before the wait (the script may have run at any moment of it, on
 * each server), so a wait takes at most half the TTL.
 */
int64_t
lock_wait_chunk(struct lock *l, int64_t start, int64_t deadline, int64_t sleep,
    int64_t ttl_ms)
{
	int64_t	now = now_mono_ms();

	if (l->on_wait != NULL) {
		l->on_wait(l, &l->holder, now - start,
		    deadline < 0 ? -1 : deadline - now);
		if (sleep > 1000)
			sleep = 1000;
	}
	if (sleep > ttl_ms / 2)
		sleep = ttl_ms / 2;
	return sleep < 1 ? 1 : sleep;
}

/*
 * Sleep ms (plus jitter) without a server: after a late grant the wake
 * list holds our own give-back, which would end a BLPOP at once.
 */
int
lock_pause_ms(int64_t ms, struct err *e)
{
	struct timespec	ts;

	ms += lock_jitter();
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = ms % 1000 * 1000000;
	if (!signal_caught)
		nanosleep(&ts, NULL);
	if (signal_caught) {
		err_set(e, ERR_INTERRUPTED, "interrupted by a signal");
		return -1;
	}
	return 0;
}

/*
 * The pause before the next round when the last blocking read answered an
 * error: doubled each time in a row, never past --wait.
 */
int
lock_wait_error_pause(struct lock *l, int64_t deadline, struct err *e)
{
	int64_t	ms = WAIT_ERR_PAUSE_MS << (l->wait_errors < 8 ?
		    l->wait_errors - 1 : 7), left;

	if (ms > WAITER_RENEW_MS)
		ms = WAITER_RENEW_MS;
	if (deadline >= 0 && ms > (left = deadline - now_mono_ms()))
		ms = left > 0 ? left : 0;
	return lock_pause_ms(ms, e);
}

/*
 * Is e what a failover, a restart or a reshard says for a while: a server
 * that cannot be reached, closes the connection, does not answer in time,
 * or answers that it is loading, read-only, not yet a master, between
 * slot owners, or busy with another client's script?  Not: credentials,
 * TLS, bad input, a damaged lock, a full server.
 */
static int
passing(const struct err *e)
{
	static const char *const words[] = {
		"(LOADING)", "(READONLY)", "(MASTERDOWN)", "(CLUSTERDOWN)",
		"(TRYAGAIN)", "(BUSY)", "(MOVED)", "(ASK)",
		"not a master (a failover",
	};
	size_t	i;

	switch (e->kind) {
	case ERR_UNAVAILABLE:
	case ERR_TIMEOUT:
	case ERR_REFUSED:
		return 1;
	case ERR_REPLY:
		for (i = 0; i < sizeof words / sizeof *words; i++)
			if (strstr(e->msg, words[i]) != NULL)
				return 1;
		return 0;
	default:
		return 0;
	}
}

/*
 * A wait rides through a server that is away for a while (see passing):
 * try again after a pause that doubles (RIDE_FIRST_MS to RIDE_MAX_MS,
 * with jitter), never past the deadline.  0 to try again, -1 to give up
 * with e as it is (no time left, a signal, or an error that will stay).
 */
int
lock_ride_through(struct lock *l, int64_t deadline, int64_t *pause, int *rides,
    int answered, struct err *e)
{
	char	d[32];
	int64_t	left, ms;

	/*
	 * A wait without an end rides through only a server that answered
	 * it first: one that is down from the start fails at once, so that
	 * a job waiting for ever for its lock does not wait for ever for a
	 * dead server too.
	 */
	if ((l->wait_ms == 0 && l->every_ms <= 0) || (deadline < 0 &&
	    !answered) || !passing(e) || signal_caught)
		return -1;
	left = deadline < 0 ? INT64_MAX : deadline - now_mono_ms();
	if (left <= 0)
		return -1;
	ms = *pause < left ? *pause : left;
	(*rides)++;
	log_verbose("%s: %s; trying again in %s (attempt %d), until %s "
	    "runs out", l->name, e->msg, duration_format(ms, d, sizeof d),
	    *rides + 1, l->wait_ms == 0 ? "--timeout" : "--wait");
	if (lock_pause_ms(ms, e) == -1)
		return -1;
	if ((*pause *= 2) > RIDE_MAX_MS)
		*pause = RIDE_MAX_MS;
	return 0;
}

/*
 * exec -n --every: an attempt whose reply was lost (the server may have
 * recorded the slot's start, this run's, which refuses every other
 * machine) is tried again, as -w's is, until one --timeout after the first
 * failure (the run finds its own start and takes the lock; the slot is not
 * left without a run).  The deadline for ride_through, set on the first
 * call.
 */
int64_t
lock_own_retry_by(const struct lock *l, int64_t *retry_by)
{
	if (*retry_by < 0)
		*retry_by = now_mono_ms() + l->q->opts->timeout_ms;
	return *retry_by;
}
