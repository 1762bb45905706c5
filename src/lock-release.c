/*
 * lock-release.c: a held lock's life after the acquire: extending it,
 * giving it back (release, the give-back of a partial acquire, the
 * unlisting of a waiter), the notes the client writes in its history, and
 * settling a release whose reply was lost.  The acquire and its waiting
 * are in lock.c; what both read of a reply, in lock-private.h.
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
#include "url.h"
#include "util.h"

/* How long a history note of the client's own may take, at most. */
#define NOTE_MAX_MS		500

/* extend.lua: code 0 not the holder, 1 extended (src/lua/contract). */
static int
extend_shape(const struct redis_reply *r, void *arg)
{
	(void)arg;
	if (r->type != REDIS_T_ARRAY || !lock_int_at(r, EXTENDED_CODE, 0, 1))
		return 0;
	return r->element[EXTENDED_CODE]->integer == 0 ||
	    (lock_int_at(r, EXTENDED_FENCE, 0, LLONG_MAX) &&
	    lock_int_at(r, EXTENDED_TTL_MS, 1, LOCK_REPLY_MAX_TTL));
}

/*
 * --wait-replicas covers a scheduled run's outcome as it covers its start:
 * the release that wrote it into the schedule (on the servers in
 * answered) waits for the replicas too.  One that did not hear in time is
 * said: a failover now would forget the outcome, and with --retry-failed
 * another machine would run the job again in this slot.  The release
 * itself stands.
 */
static void
await_outcome(struct lock *l, unsigned answered)
{
	int	*won, i, n = l->q->n;

	won = xcalloc(n, sizeof *won);
	for (i = 0; i < n; i++)
		won[i] = (answered >> i) & 1;
	lock_await_replicas(l, won);
	if (lock_count(won, n) < quorum_majority(l->q))
		log_warn("%s: fewer than %d replica%s acknowledged the run's "
		    "outcome within %lldms (--wait-replicas): a failover now "
		    "would forget it (see \"Schedules across a fleet\" in "
		    "rlock-schedules(7))", l->name, l->wait_replicas,
		    l->wait_replicas == 1 ? "" : "s",
		    (long long)l->wait_timeout_ms);
	free(won);
}

void
lock_unlist(struct lock *l)
{
	if (!l->listed)
		return;
	/*
	 * The release script, as a give-back, takes our entry off the
	 * waiters list and our place off the --fifo line, and gives back, to
	 * the next in line, a lock that a release handed us after our last
	 * attempt (see hand_over() in lib.lua).  Best effort.
	 */
	lock_give_back(l);
}

void
lock_give_back(struct lock *l)
{
	struct err	e;

	lock_release_script(l, NULL, 1, 0, 0, &e);
}

int
lock_release(struct lock *l, const char *outcome, struct err *e)
{
	return lock_release_script(l, outcome, 0, 0, 0, e);
}

void
lock_release_ended(struct lock *l, const char *outcome)
{
	struct err	e;

	l->ended = 1;
	lock_release_script(l, outcome, 0, 0, 1, &e);
	l->ended = 0;
}

/*
 * Could a majority still hold the lock, when the servers in gone (bit i:
 * server i answered "not the holder") no longer do, and those in held
 * answered that they held it (released or extended it)?  Only the
 * servers we won count besides, when this process knows them (it
 * acquired the lock): one we never won says nothing by answering "not
 * the holder", and one that did not answer may hold it still; one whose
 * grant we never heard of (its reply was lost) but that says it held it
 * did.
 */
static int
majority_left(const struct lock *l, unsigned gone, unsigned held)
{
	int	i, left = 0;

	for (i = 0; i < l->q->n; i++)
		if ((held & 1u << i) || ((!l->won_known ||
		    (l->won & 1u << i)) && !(gone & 1u << i)))
			left++;
	return left >= quorum_majority(l->q);
}

/*
 * The release script, as a release (give_back 0: every hold of the token)
 * or as a give-back of this run (only what it took; keep_listed: its
 * waiter entries stay).  settling: a release sent again after one whose
 * outcome is unknown, which records no loss when it finds the lock gone
 * (the first one, late, may have ended it).  1 released, 0 not the holder
 * (lost), -1 error.
 */
int
lock_release_script(struct lock *l, const char *outcome, int give_back,
    int keep_listed, int settling, struct err *e)
{
	struct redis_reply	**rep;
	struct history_args	  h;
	const char		 *args[RELEASE__COUNT];
	char			  pid[24];
	unsigned		  gone = 0, yes = 0;
	int			  i, ok, released = 0, skipped = 0, *ask;

	lock_history_args(l, &h);
	if (!keep_listed)
		l->listed = 0;	/* the script takes us off the list too */
	snprintf(pid, sizeof pid, "%lld", l->meta.pid);
	args[RELEASE_TOKEN] = l->token;
	args[RELEASE_OUTCOME] = outcome != NULL ? outcome : "";
	args[RELEASE_HISTORY_LEN] = h.len;
	args[RELEASE_HISTORY_TTL_MS] = h.ttl;
	args[RELEASE_HOST] = lock_or_empty(l->meta.host);
	args[RELEASE_PID] = pid;
	args[RELEASE_USER] = lock_or_empty(l->meta.user);
	/*
	 * The script hands the lock to the next waiter itself: with one
	 * server only, for several would each choose on their own.
	 */
	args[RELEASE_HAND_OVER] = l->q->n == 1 ? "1" : "0";
	args[RELEASE_RUN] = give_back ? l->run : "";
	args[RELEASE_KEEP_LISTED] = keep_listed ? "1" : "0";
	args[RELEASE_SETTLING] = settling ? "1" : "0";
	/*
	 * Whether the run may have a schedule to end (exec --every; a
	 * release that cannot know, every_ms < 0): the common release reads
	 * none.
	 */
	args[RELEASE_EVERY] = l->every_ms != 0 ? "1" : "0";
	args[RELEASE_ENDED] = l->ended ? "1" : "0";
	rep = xcalloc(l->q->n, sizeof *rep);
	/*
	 * Every server that can be reached, each within its own --timeout:
	 * not only until a majority has answered.  A request left unread may
	 * never run (an EVALSHA answered NOSCRIPT needs its EVAL sent; a
	 * connect still under way has not sent it yet), and would leave the
	 * key on that server until it expires.  Nor is a server whose connect
	 * failed a moment ago passed over.  Only a server that this process's
	 * acquire never reached (silent since we started) is left out: it
	 * cannot hold what we took, and waiting on it gains nothing.
	 */
	ask = xcalloc(l->q->n, sizeof *ask);
	for (i = 0; i < l->q->n; i++) {
		ask[i] = !l->tried || quorum_reached(l->q, i);
		skipped += !ask[i];
	}
	quorum_retry_now(l->q);
	ok = quorum_run(l->q, &(struct quorum_req){ .script =
	    l->every_ms != 0 ? &script_release_every : &script_release,
	    .only = ask, .nkeys = KEY__COUNT, .keys = lock_keys(l),
	    .nargs = release_nargs(args), .args = args }, rep, e);
	ok = quorum_check(l->q, rep, lock_flag_shape, NULL, "the release script",
	    ok, e) + skipped;
	free(ask);
	for (i = 0; i < l->q->n; i++) {
		if (rep[i] == NULL || rep[i]->type != REDIS_T_INTEGER)
			continue;
		if (rep[i]->integer == 1) {
			released++;
			yes |= 1u << i;
		} else
			gone |= 1u << i;
	}
	quorum_free_replies(l->q, rep);
	free(rep);
	if (ok < quorum_majority(l->q))
		return -1;
	l->maybe_held = 0;
	if (l->every_ms > 0 && outcome != NULL && *outcome != '\0' &&
	    !give_back && l->wait_replicas > 0)
		await_outcome(l, gone | yes);
	/*
	 * Lost only when fewer than a majority can still have held it:
	 * a server we never won, or one that did not answer in time (it
	 * holds the key until it expires, or deletes it when the request
	 * reaches it), is no sign of a loss.
	 */
	return released >= quorum_majority(l->q) || majority_left(l, gone, yes);
}

void
lock_note(struct lock *l, const char *event, const char *why,
    const char *outcome)
{
	struct redis_reply	**rep;
	struct history_args	  h;
	struct err		  e;
	const char		 *args[NOTE__COUNT + 16];
	char			  pid[24], fence[24], held[24];
	/* The entry's fields: the numbers are written below. */
	const char		 *fields[] = {
		"h", lock_or_empty(l->meta.host), "p", pid,
		"u", lock_or_empty(l->meta.user), "c", lock_or_empty(l->meta.command),
		"f", fence, "d", held, "x", outcome, "y", why,
	};
	size_t			  i;
	int			  n = 0;

	if (l->history_len <= 0)
		return;
	lock_history_args(l, &h);
	snprintf(pid, sizeof pid, "%lld", l->meta.pid);
	snprintf(fence, sizeof fence, "%lld", l->fence);
	snprintf(held, sizeof held, "%lld",
	    (long long)(now_mono_ms() - l->taken_at));
	args[n++] = event;
	args[n++] = h.len;
	args[n++] = h.ttl;
	args[n++] = l->token;
	for (i = 0; i < sizeof fields / sizeof fields[0]; i++)
		args[n++] = fields[i];
	rep = xcalloc(l->q->n, sizeof *rep);
	/*
	 * A lost lock is often an unreachable server: the note may delay
	 * the exit by NOTE_MAX_MS at most, not by a whole --timeout.
	 */
	quorum_limit(l->q, now_mono_ms() + NOTE_MAX_MS);
	quorum_retry_now(l->q);
	quorum_run(l->q, &(struct quorum_req){ .script = &script_note,
	    .nkeys = KEY__COUNT, .keys = lock_keys(l), .nargs = n,
	    .args = args }, rep, &e);
	quorum_limit(l->q, 0);
	quorum_free_replies(l->q, rep);
	free(rep);
}

/*
 * An extend's word that a newcomer asked the holder to stop (exec
 * --replace, see acquire.lua): who, kept in l->replace_host and _pid
 * (the first server's that says so).
 */
static void
note_replace(struct lock *l, const struct redis_reply *r)
{
	struct redis_reply	*const *el = r->element;

	if (l->replace_host[0] != '\0' || r->elements < EXTENDED__COUNT ||
	    el[EXTENDED_REPLACE_HOST]->type != REDIS_T_STRING)
		return;
	snprintf(l->replace_host, sizeof l->replace_host, "%s",
	    el[EXTENDED_REPLACE_HOST]->str);
	snprintf(l->replace_pid, sizeof l->replace_pid, "%s",
	    el[EXTENDED_REPLACE_PID]->type == REDIS_T_STRING ?
	    el[EXTENDED_REPLACE_PID]->str : "?");
}

int
lock_extend(struct lock *l, int64_t ttl_ms, struct err *e)
{
	struct redis_reply	**rep;
	const char		 *args[EXTEND__COUNT];
	char			  ttl[24], fallback[24];
	long long		  fence = 0, new_ttl = 0;
	int64_t			  start;
	unsigned		  gone = 0;
	int			  i, ok, got, *won, n = l->q->n;

	snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
	snprintf(fallback, sizeof fallback, "%lld",
	    (long long)(l->ttl_ms > 0 ? l->ttl_ms : LOCK_DEFAULT_TTL_MS));
	args[EXTEND_TOKEN] = l->token;
	args[EXTEND_TTL_MS] = ttl;
	args[EXTEND_FALLBACK_TTL_MS] = fallback;
	rep = xcalloc(n, sizeof *rep);
	won = xcalloc(n, sizeof *won);
	start = now_mono_ms();
	ok = quorum_run(l->q, &(struct quorum_req){ .script = &script_extend,
	    .nkeys = KEY__COUNT, .keys = lock_keys(l), .nargs = EXTEND__COUNT,
	    .args = args, .settled = lock_settled_grant }, rep, e);
	ok = quorum_check(l->q, rep, extend_shape, NULL, "the extend script",
	    ok, e);
	for (i = 0; i < n; i++) {
		if (rep[i] != NULL && rep[i]->type == REDIS_T_ARRAY &&
		    rep[i]->element[EXTENDED_CODE]->integer == 0)
			gone |= 1u << i;	/* see extend_shape */
		if (!(won[i] = lock_reply_granted(rep[i], &fence)))
			continue;
		new_ttl = rep[i]->element[EXTENDED_TTL_MS]->integer; /* extend_shape */
		note_replace(l, rep[i]);
	}
	quorum_free_replies(l->q, rep);
	free(rep);
	if (ok >= quorum_majority(l->q) && l->wait_replicas > 0 &&
	    lock_count(won, n) >= quorum_majority(l->q)) {
		lock_await_replicas(l, won);
		if (lock_count(won, n) < quorum_majority(l->q)) {
			err_set(e, ERR_UNAVAILABLE, "%s: fewer than %d "
			    "replica%s acknowledged the extend within %lldms "
			    "(--wait-replicas)", l->q->urls[0].display,
			    l->wait_replicas, l->wait_replicas == 1 ? "" : "s",
			    (long long)l->wait_timeout_ms);
			ok = -1;
		}
	}
	got = lock_count(won, n);
	if (l->won_known)
		for (i = 0; i < n; i++) {
			if (won[i])
				l->won |= 1u << i;
			else if (gone & 1u << i)
				l->won &= ~(1u << i);
		}
	free(won);
	if (ok < quorum_majority(l->q))
		return -1;
	if (got < quorum_majority(l->q)) {
		if (!majority_left(l, gone, 0))
			return 0;
		/*
		 * Not extended on a majority, but a majority may still hold
		 * it (a server we won answered late, or not at all): not a
		 * loss; the heartbeat tries again within the validity.
		 */
		err_set(e, ERR_TIMEOUT, "%s: extended on %d of %d servers; "
		    "the others that hold it did not answer in time", l->name,
		    got, n);
		return -1;
	}

	l->fence = fence;
	l->ttl_ms = new_ttl;
	l->valid_until = start + new_ttl - lock_drift(new_ttl);
	return 1;
}

long long
lock_to_ll(const struct redis_reply *r)
{
	if (r == NULL)
		return 0;
	if (r->type == REDIS_T_INTEGER)
		return r->integer;
	if (r->type == REDIS_T_STRING)
		return strtoll(r->str, NULL, 10);
	return 0;
}


/* ------------------------------------------ settling an unknown outcome */

/*
 * A release whose reply is lost (its connection closed, or its --timeout
 * ran out, after it was sent) may have run or not, and one that is late
 * may run later still: its outcome is unknown, and taking it for a
 * failure and then finding the key gone for a loss (what the keeper and
 * exec did) calls a lock lost that its owner let go of.  So such a
 * release is settled: the servers are asked, read-only, whether the token
 * still holds the lock, and the release is sent again only where it does.
 * Never blindly: a release that finds the key gone records a loss in the
 * history (release.lua), and a second release after a first that ran
 * would do just that.
 *
 * What "no longer the token's" then means is the caller's to say, from
 * when the first release went out: the lock was surely ours until
 * valid_until, so a release sent before it ended a section that the lock
 * guarded to its end, and whatever removed the key afterwards (that
 * release, or the TTL running out because it never arrived) the lock was
 * released, not lost.  A release sent after valid_until that finds it
 * gone is a loss, as when its answer says "not the holder" outright.
 *
 * An extend is different, and is not settled here: after an extend whose
 * reply is lost the lock may or may not have been extended, but either
 * way it is still ours until the last confirmed valid_until, and the
 * caller retries (heartbeat.c, keeper.c).  A retry that answers "not the
 * holder" cannot be blamed on the lost extend, which only ever lengthens
 * the lock: the key was removed by someone else (release --force, a DEL,
 * a server that lost it), a real loss while the command may still run.
 * Only our own release explains a key gone after it, so only the release
 * is ever settled as released.
 */

/*
 * How long a settle goes on by default: twice the round trip's --timeout,
 * and at least SETTLE_MIN_MS (a reply cut fails at once, and a server
 * reached anew answers in a millisecond or two).
 */
#define SETTLE_TIMEOUTS		2
#define SETTLE_MIN_MS		500
#define SETTLE_FIRST_MS		50
#define SETTLE_MAX_MS		1000

/* Whether reply holds `token` (of length len), as a string. */
static int
reply_is(const struct redis_reply *r, const char *token, size_t len)
{
	return r != NULL && r->type == REDIS_T_STRING && r->len == len &&
	    memcmp(r->str, token, len) == 0;
}

/*
 * What one server's inspect.lua reply (one lock) says of the token: 1 it
 * holds the lock (the plain holder's token, element 12; or one of the
 * holders of a shared lock or a semaphore, element 14's list, each holder
 * a list led by its token), 0 it does not, -1 no answer or a damaged lock.
 */
static int
token_holds(const struct redis_reply *r, const char *token)
{
	const struct redis_reply	*s, *list, *h;
	size_t				 i, len = strlen(token);

	if (r == NULL || r->type != REDIS_T_ARRAY || r->elements != 1 ||
	    (r = r->element[0])->type != REDIS_T_ARRAY ||
	    r->elements < STATUS__COUNT)
		return -1;
	if (reply_is(r->element[STATUS_TOKEN], token, len))
		return 1;
	if ((s = r->element[STATUS_HOLDERS])->type != REDIS_T_ARRAY ||
	    s->elements < HOLDERS__COUNT ||
	    (list = s->element[HOLDERS_LIST])->type != REDIS_T_ARRAY)
		return 0;
	for (i = 0; i < list->elements; i++) {
		h = list->element[i];
		if (h->type == REDIS_T_ARRAY && h->elements > HOLDER_TOKEN &&
		    reply_is(h->element[HOLDER_TOKEN], token, len))
			return 1;
	}
	return 0;
}

int
lock_holds(struct lock *l, struct err *e)
{
	struct redis_reply	**rep;
	int			  i, yes = 0, no = 0;

	rep = xcalloc(l->q->n, sizeof *rep);
	quorum_run(l->q, &(struct quorum_req){ .script = &script_inspect,
	    .nkeys = KEY__COUNT, .keys = lock_keys(l) }, rep, e);
	for (i = 0; i < l->q->n; i++)
		switch (token_holds(rep[i], l->token)) {
		case 1:
			yes++;
			break;
		case 0:
			no++;
			break;
		}
	quorum_free_replies(l->q, rep);
	free(rep);
	if (yes >= quorum_majority(l->q))
		return 1;
	/* Those that did not answer may all still hold it: not enough. */
	if (l->q->n - no < quorum_majority(l->q))
		return 0;
	if (e->msg[0] == '\0')
		err_set(e, ERR_UNAVAILABLE, "cannot tell whether %s is still "
		    "held: too few servers answered", l->name);
	return -1;
}

int
lock_settle_release(struct lock *l, const char *outcome, int64_t until,
    struct err *e)
{
	int64_t	saved = l->q->limit, backoff = SETTLE_FIRST_MS, now;
	int	rc = -1;

	/*
	 * Only an outcome that is unknown is settled: a reply lost (the
	 * connection closed or reset) or late.  An answer that says the
	 * script did not run (TRYAGAIN while the slot moves, a refusal, a
	 * damaged lock), or a server that answers what no script sends (a
	 * wrong shape), is no better known by asking: the release failed,
	 * in its own words.
	 */
	if (e->kind != ERR_TIMEOUT && e->kind != ERR_UNAVAILABLE)
		return -1;
	if (until == 0)
		until = now_mono_ms() + (SETTLE_TIMEOUTS *
		    l->q->opts->timeout_ms > SETTLE_MIN_MS ? SETTLE_TIMEOUTS *
		    l->q->opts->timeout_ms : SETTLE_MIN_MS);
	quorum_limit(l->q, until);
	while ((now = now_mono_ms()) < until) {
		log_verbose("%s: the release's outcome is unknown (%s): asking "
		    "whether the token still holds it", l->name, e->msg);
		err_clear(e);
		quorum_retry_now(l->q);
		rc = lock_holds(l, e);
		if (rc == 0) {
			rc = LOCK_SETTLED;
			break;
		}
		if (rc == 1) {
			err_clear(e);
			/*
			 * Held a moment ago: gone now is our release, late,
			 * which the history has already (no 'lost' beside it).
			 */
			if ((rc = lock_release_script(l, outcome, 0, 0, 1, e)) != -1) {
				rc = rc == 1 ? 1 : LOCK_SETTLED;
				break;
			}
		}
		if (now + backoff >= until)
			break;
		nanosleep(&(struct timespec){ .tv_sec = backoff / 1000,
		    .tv_nsec = backoff % 1000 * 1000000 }, NULL);
		if ((backoff *= 2) > SETTLE_MAX_MS)
			backoff = SETTLE_MAX_MS;
	}
	quorum_limit(l->q, saved);
	if (rc == LOCK_SETTLED) {
		l->maybe_held = 0;
		log_verbose("%s: no longer the token's after its release: "
		    "released", l->name);
	}
	return rc;
}
