/* heartbeat.c: the thread that extends a lock while exec's command runs. */

/*
 * Contract: the lock is ours until valid_until, the CLOCK_MONOTONIC time
 * taken before the last confirmed extend was sent, plus the TTL, minus the
 * drift margin (lock.c computes it).  Every heartbeat interval the thread
 * extends; a failure (timeout, refused, error reply) is retried with a
 * short doubling backoff, reconnecting, each attempt bounded by what
 * remains of the validity, and never past it.  An extend that finds the
 * token gone, or a validity that runs out unconfirmed, is a loss: the
 * thread says why and wakes the supervisor, which owns the child.
 *
 * The thread never touches the supervisor's connection: a slow extend must
 * not delay a release, nor the other way round.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "duration.h"
#include "heartbeat.h"
#include "log.h"
#include "util.h"

#define BACKOFF_FIRST_MS	50
#define BACKOFF_MAX_MS		1000

/* Sleep on the condition variable until the monotonic time `until` or stop. */
static void
sleep_until(struct heartbeat *hb, int64_t until)
{
	struct timespec	ts;

	ts.tv_sec = until / 1000;
	ts.tv_nsec = (until % 1000) * 1000000;
	while (!hb->stop && !hb->now && now_mono_ms() < until)
		if (pthread_cond_timedwait(&hb->cv, &hb->mu, &ts) == ETIMEDOUT)
			break;
}

static void
declare_lost(struct heartbeat *hb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
declare_lost(struct heartbeat *hb, const char *fmt, ...)
{
	va_list	ap;

	pthread_mutex_lock(&hb->mu);
	hb->lost = 1;
	va_start(ap, fmt);
	vsnprintf(hb->why, sizeof hb->why, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&hb->mu);
	pthread_kill(hb->notify, hb->notify_sig);
}

/*
 * A newcomer asked the holder to stop (exec --replace): the supervisor is
 * told once, and stops the command; the extends go on until it has.
 */
static void
told_replaced(struct heartbeat *hb)
{
	pthread_mutex_lock(&hb->mu);
	hb->replaced = 1;
	snprintf(hb->replaced_by, sizeof hb->replaced_by, "%s pid %s",
	    hb->h.l.replace_host, hb->h.l.replace_pid);
	pthread_mutex_unlock(&hb->mu);
	pthread_kill(hb->notify, hb->notify_sig);
}

/* One extend, retried until it is confirmed or the validity runs out. */
static int
extend_once(struct heartbeat *hb)
{
	struct err	e;
	int64_t		left, backoff = BACKOFF_FIRST_MS;
	char		d[32];
	int		rc;

	err_clear(&e);
	for (;;) {
		left = hb->h.l.valid_until - now_mono_ms();
		if (left <= 0) {
			declare_lost(hb, "no extend was confirmed before the "
			    "lock's validity ended (last error: %s)",
			    e.msg[0] ? e.msg : "none");
			return -1;
		}
		/* No attempt may outlast the validity. */
		quorum_limit(&hb->h.q, hb->h.l.valid_until);
		rc = lock_extend(&hb->h.l, hb->h.l.ttl_ms, &e);
		if (rc == 1) {
			if (hb->on_extend != NULL)
				hb->on_extend(hb->on_extend_arg,
				    hb->h.l.valid_until);
			if (hb->h.l.replace_host[0] != '\0' && !hb->replaced)
				told_replaced(hb);
			log_verbose("extended %s by %s", hb->h.l.name,
			    duration_format(hb->h.l.ttl_ms, d, sizeof d));
			return 0;
		}
		/*
		 * Refused, even on a retry after an extend whose reply was
		 * lost: that extend could only have lengthened the lock, so
		 * someone else removed it -- a loss (see "settling" in
		 * lock.c: only a release is ever settled as released).
		 */
		if (rc == 0) {
			declare_lost(hb, "the lock's key is gone or holds "
			    "another token");
			return -1;
		}
		log_verbose("extending %s failed: %s; retrying", hb->h.l.name,
		    e.msg);
		pthread_mutex_lock(&hb->mu);
		sleep_until(hb, now_mono_ms() + (backoff < left ? backoff :
		    left));
		rc = hb->stop;
		pthread_mutex_unlock(&hb->mu);
		if (rc)
			return -1;
		if ((backoff *= 2) > BACKOFF_MAX_MS)
			backoff = BACKOFF_MAX_MS;
	}
}

static void *
run(void *arg)
{
	struct heartbeat	*hb = arg;
	int64_t			 next;
	int			 stop, asked;

	next = hb->h.l.acquired_at + hb->interval_ms;
	for (;;) {
		pthread_mutex_lock(&hb->mu);
		sleep_until(hb, next);
		stop = hb->stop;
		asked = hb->now;
		hb->now = 0;
		pthread_mutex_unlock(&hb->mu);
		if (stop)
			break;
		next = now_mono_ms() + hb->interval_ms;
		if (extend_once(hb) == -1)
			break;
		if (asked)
			pthread_kill(hb->notify, hb->notify_sig);
	}
	return NULL;
}

void
heartbeat_init(struct heartbeat *hb, const struct lock *l,
    const struct held_target *t, int64_t interval_ms, int notify_sig)
{
	pthread_condattr_t	ca;

	memset(hb, 0, sizeof *hb);
	hb->interval_ms = interval_ms;
	hb->notify = pthread_self();
	hb->notify_sig = notify_sig;
	/* Connections are made on the first extend, in the thread. */
	held_clone(&hb->h, l, t);

	pthread_mutex_init(&hb->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&hb->cv, &ca);
	pthread_condattr_destroy(&ca);
}

int64_t
heartbeat_due(const struct heartbeat *hb)
{
	/* Half an interval before the first extend is due. */
	return hb->h.l.acquired_at + hb->interval_ms / 2;
}

int
heartbeat_start(struct heartbeat *hb, struct err *e)
{
	int	rc;

	if (hb->started)
		return 0;
	if ((rc = pthread_create(&hb->thread, NULL, run, hb)) != 0) {
		err_set(e, ERR_SOFTWARE, "cannot start the heartbeat thread: "
		    "%s", strerror(rc));
		return -1;
	}
	hb->started = 1;
	return 0;
}

int
heartbeat_extend_now(struct heartbeat *hb, struct err *e)
{
	pthread_mutex_lock(&hb->mu);
	hb->now = 1;
	pthread_cond_signal(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
	return heartbeat_start(hb, e);
}

void
heartbeat_stop(struct heartbeat *hb, struct lock *l)
{
	pthread_mutex_lock(&hb->mu);
	hb->stop = 1;
	pthread_cond_signal(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
	if (hb->started)
		pthread_join(hb->thread, NULL);
	if (l != NULL)
		held_return(l, &hb->h);
	held_free(&hb->h);
	pthread_cond_destroy(&hb->cv);
	pthread_mutex_destroy(&hb->mu);
}

int
heartbeat_replaced(struct heartbeat *hb, char *by, size_t bylen)
{
	int	replaced;

	pthread_mutex_lock(&hb->mu);
	replaced = hb->replaced;
	if (replaced)
		snprintf(by, bylen, "%s", hb->replaced_by);
	pthread_mutex_unlock(&hb->mu);
	return replaced;
}

int
heartbeat_state(struct heartbeat *hb, int64_t *valid_until, char *why,
    size_t whylen)
{
	int	lost;

	pthread_mutex_lock(&hb->mu);
	lost = hb->lost;
	*valid_until = hb->h.l.valid_until;	/* atomic: see lock.h */
	if (lost && why != NULL)
		snprintf(why, whylen, "%s", hb->why);
	pthread_mutex_unlock(&hb->mu);
	return lost;
}
