/* lock.c: the lock algorithm over a quorum of Redis servers. */

/*
 * Invariants:
 *  - A lock is the key PREFIX{NAME} holding its owner's token.  It is only
 *    ever set when absent (SET NX inside acquire.lua), and only deleted or
 *    extended by a script that first compares the token: no one but the
 *    owner can release or extend it, and a late release by an owner whose
 *    lock expired and was taken by another changes nothing.
 *  - The fence counter PREFIX{NAME}:fence has no expiry and is only ever
 *    INCR'd, in the same script that takes the lock, so every acquisition
 *    gets a number greater than every earlier one.
 *  - The lock is ours until valid_until = (time before the request was
 *    sent) + TTL - drift, counted on CLOCK_MONOTONIC.  Taking the time
 *    before sending means a slow reply shortens our view of the lock, never
 *    lengthens it past the server's; a request that first waits on the
 *    wake list counts from before the wait.
 *  - Every key of a lock carries the hash tag {NAME}, so each script touches
 *    one Redis Cluster slot.
 */

#include <uuid/uuid.h>

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

/* When a lock has no expiry (set by hand), look again this often. */
#define NO_EXPIRY_RECHECK_MS	5000
/* Waiters woken by expiry spread their retries over this much. */
#define JITTER_MS		20
/*
 * A grant that arrives after its validity has run out is given back and
 * tried again, each time after a longer pause (LATE_PAUSE_MS doubled);
 * after LATE_MAX such grants in a row the round trip is taken to be too
 * slow for the TTL, and acquiring fails rather than spin.
 */
#define LATE_PAUSE_MS		10
#define LATE_MAX		6

const char *
lock_or_empty(const char *s)
{
	return s != NULL ? s : "";
}

int64_t
lock_drift(int64_t ttl_ms)
{
	return ttl_ms / 100 + 2;
}

void
lock_new_token(char *buf, size_t len)
{
	uuid_t	u;
	char	s[37];

	uuid_generate_random(u);
	uuid_unparse_lower(u, s);
	snprintf(buf, len, "%s", s);
}

void
lock_init(struct lock *l, struct quorum *q, const char *prefix,
    const char *name, const char *token)
{
	static const char *const suffix[KEY__COUNT] = KEY_SUFFIXES;
	int			 k;

	memset(l, 0, sizeof *l);
	for (k = 0; k < KEY__COUNT; k++)
		xasprintf(&l->keys[k], "%s{%s}%s", prefix, name, suffix[k]);
	l->q = q;
	l->name = name;
	if (token != NULL)
		snprintf(l->token, sizeof l->token, "%s", token);
	/* A --fifo waiter's own wake list: the head is woken by name. */
	xasprintf(&l->own_wake_key, "%s:%s", l->wake_key, l->token);
}

void
lock_free(struct lock *l)
{
	int	k;

	for (k = 0; k < KEY__COUNT; k++)
		free(l->keys[k]);
	free(l->own_wake_key);
}

/*
 * The lock's keys as a script takes them: KEY__COUNT, in the contract's
 * order.  The names of struct lock's union agree with it, checked here.
 */
#define KEY_AT(f, k)	_Static_assert(offsetof(struct lock, f) == \
	offsetof(struct lock, keys) + (k) * sizeof(char *), \
	"struct lock's " #f " is not the contract's key " #k)
KEY_AT(key, KEY_LOCK);
KEY_AT(fence_key, KEY_FENCE);
KEY_AT(wake_key, KEY_WAKE);
KEY_AT(waiters_key, KEY_WAITERS);
KEY_AT(queue_key, KEY_QUEUE);
KEY_AT(log_key, KEY_LOG);
KEY_AT(every_key, KEY_EVERY);
KEY_AT(none_key, KEY_NONE);

const char **
lock_keys(const struct lock *l)
{
	return (const char **)(uintptr_t)l->keys;
}

unsigned
lock_jitter(void)
{
	static __thread unsigned	seed;

	if (seed == 0)
		seed = (unsigned)now_mono_ms() ^ ((unsigned)getpid() << 16);
	return (unsigned)rand_r(&seed) % (JITTER_MS + 1);
}

/* ------------------------------------------------------------ replies */

/*
 * What each script answers is checked before anything is read from it
 * (see quorum_check), and a number is bounded before any arithmetic is
 * done with it (see lock-private.h): a server may say anything.
 */
int
lock_int_at(const struct redis_reply *r, size_t i, long long min,
    long long max)
{
	return r->type == REDIS_T_ARRAY && i < r->elements &&
	    r->element[i]->type == REDIS_T_INTEGER &&
	    r->element[i]->integer >= min && r->element[i]->integer <= max;
}

long long
lock_clamp(long long v, long long min, long long max)
{
	return v < min ? min : v > max ? max : v;
}

/*
 * acquire.lua: one of the replies acquire_held (code 1), acquire_busy (0;
 * a PTTL of -1 or -2 included), acquire_mix (-1: held with another
 * --limit), acquire_every (-2: refused by --every), acquire_upgrade (-3:
 * another reader's upgrade waits): see src/lua/contract.
 */
static int
acquire_shape(const struct redis_reply *r, void *arg)
{
	(void)arg;
	if (r->type != REDIS_T_ARRAY || !lock_int_at(r, 0, -4, 1))
		return 0;
	switch (r->element[0]->integer) {
	case -4:
		return r->elements >= ACQUIRE_SUPERSEDED__COUNT;
	case -3:
		return r->elements >= ACQUIRE_UPGRADE__COUNT;
	case -2:
		return r->elements >= ACQUIRE_SKIPPED__COUNT &&
		    lock_int_at(r, ACQUIRE_SKIPPED_STARTED_MS, 0,
		    LOCK_REPLY_MAX_TIME) && lock_int_at(r, ACQUIRE_SKIPPED_NOW_MS,
		    0, LOCK_REPLY_MAX_TIME);
	case -1:
		return lock_int_at(r, ACQUIRE_MIX_LIMIT, 0, LLONG_MAX);
	case 0:
		/* (Who holds it is shown when it is there: see note_holder.) */
		return lock_int_at(r, ACQUIRE_BUSY_PTTL_MS, -2, LLONG_MAX);
	default:
		return lock_int_at(r, ACQUIRE_HELD_FENCE, 0, LLONG_MAX);
	}
}

/* release.lua and fence.lua: 1 done, 0 not. */
int
lock_flag_shape(const struct redis_reply *r, void *arg)
{
	(void)arg;
	return r->type == REDIS_T_INTEGER && (r->integer == 0 ||
	    r->integer == 1);
}

/*
 * Is r acquire's acquire_held or extend's code 1 (one shape: code, fence,
 * ttl_ms)?  The fence raises *fence.
 */
_Static_assert((int)ACQUIRE_HELD_FENCE == (int)EXTENDED_FENCE &&
    (int)ACQUIRE_HELD_TTL_MS == (int)EXTENDED_TTL_MS &&
    (int)ACQUIRE_HELD_CODE == (int)EXTENDED_CODE,
    "acquire_held and extended must have one shape (src/lua/contract)");
int
lock_reply_granted(const struct redis_reply *r, long long *fence)
{
	if (r == NULL || r->type != REDIS_T_ARRAY || r->elements < 1 ||
	    r->element[ACQUIRE_HELD_CODE]->integer != 1)
		return 0;
	if (r->elements > ACQUIRE_HELD_FENCE &&
	    r->element[ACQUIRE_HELD_FENCE]->integer > *fence)
		*fence = r->element[ACQUIRE_HELD_FENCE]->integer;
	return 1;
}

/*
 * Settled: a majority granted; or too many cannot any more, and a
 * majority answered (fewer is an error, not a refusal: the rest are
 * waited for, up to their deadline, rather than given up after a grace,
 * so that a server down beside one that refused does not make a slow
 * third one's answer an error); or too many failed to answer at all.
 * (What the rest would say changes nothing; fences stay safe, see
 * align_fences.)
 */
int
lock_settled_grant(struct redis_reply **rep, const int *done, int n, void *arg)
{
	long long	fence = 0;
	int		i, yes = 0, no = 0, failed = 0, maj = n / 2 + 1;

	for (i = 0; i < n; i++) {
		if (!done[i])
			continue;
		if (lock_reply_granted(rep[i], &fence))
			yes++;
		else if (rep[i] != NULL)
			no++;
		else
			failed++;
	}
	return yes >= maj || failed > n - maj ||
	    (no + failed > n - maj && yes + no >= maj);
}

int
lock_count(const int *v, int n)
{
	int	i, c = 0;

	for (i = 0; i < n; i++)
		c += v[i] != 0;
	return c;
}

/*
 * The servers of a quorum each keep their own fence counter, so the
 * winners of one acquisition may hand out different numbers.  The holder
 * takes the greatest, F, and raises every winner below it to F: any later
 * majority shares at least one server with this one, whose counter is
 * then at least F, so its fence is greater.  A winner that cannot be
 * raised does not count.
 */
static void
align_fences(struct lock *l, int *won, const long long *fences, long long f)
{
	struct redis_reply	**rep;
	const char		 *args[FENCE__COUNT];
	char			  fs[24];
	struct err		  e;
	int			  i, *low, any = 0;

	low = xcalloc(l->q->n, sizeof *low);
	for (i = 0; i < l->q->n; i++)
		any |= low[i] = won[i] && fences[i] < f;
	if (any) {
		snprintf(fs, sizeof fs, "%lld", f);
		args[FENCE_TOKEN] = l->token;
		args[FENCE_FENCE] = fs;
		rep = xcalloc(l->q->n, sizeof *rep);
		quorum_check(l->q, rep, lock_flag_shape, NULL, "the fence script",
		    quorum_run(l->q, &(struct quorum_req){
		    .script = &script_fence, .only = low, .nkeys = KEY__COUNT,
		    .keys = lock_keys(l), .nargs = FENCE__COUNT, .args = args },
		    rep, &e), &e);
		for (i = 0; i < l->q->n; i++)
			if (low[i] && (rep[i] == NULL ||
			    rep[i]->type != REDIS_T_INTEGER ||
			    rep[i]->integer != 1))
				won[i] = 0;
		quorum_free_replies(l->q, rep);
		free(rep);
	}
	free(low);
}

/*
 * --wait-replicas: WAIT on each server that took the write; one whose
 * replicas did not all acknowledge within the timeout does not count.
 */
void
lock_await_replicas(struct lock *l, int *won)
{
	struct redis_reply	**rep;
	const char		 *argv[3];
	char			  n[16], ms[24];
	struct err		  e;
	int			  i;

	snprintf(n, sizeof n, "%d", l->wait_replicas);
	snprintf(ms, sizeof ms, "%lld", (long long)l->wait_timeout_ms);
	argv[0] = "WAIT";
	argv[1] = n;
	argv[2] = ms;
	rep = xcalloc(l->q->n, sizeof *rep);
	quorum_command(l->q, won, 3, argv, l->wait_timeout_ms, rep, &e);
	for (i = 0; i < l->q->n; i++)
		if (won[i] && (rep[i] == NULL ||
		    rep[i]->type != REDIS_T_INTEGER ||
		    rep[i]->integer < l->wait_replicas))
			won[i] = 0;
	quorum_free_replies(l->q, rep);
	free(rep);
}

/* Remember who holds the lock, from a busy reply, for a waiter to show. */
static void
note_holder(struct lock *l, const struct redis_reply *r)
{
	struct lock_holder	*h = &l->holder;
	struct redis_reply	*const *el = r->element;

	memset(h, 0, sizeof *h);
	h->seen_at = now_mono_ms();
	h->pttl_ms = lock_clamp(el[ACQUIRE_BUSY_PTTL_MS]->integer, -2,
	    LOCK_REPLY_MAX_TTL);
	h->held_ms = -1;
	if (r->elements < ACQUIRE_BUSY__COUNT)
		return;
	if (el[ACQUIRE_BUSY_HOST]->type == REDIS_T_STRING)
		snprintf(h->host, sizeof h->host, "%s",
		    el[ACQUIRE_BUSY_HOST]->str);
	h->pid = lock_to_ll(el[ACQUIRE_BUSY_PID]);
	if (el[ACQUIRE_BUSY_COMMAND]->type == REDIS_T_STRING)
		url_mask(el[ACQUIRE_BUSY_COMMAND]->str, h->command,
		    sizeof h->command);
	if (lock_to_ll(el[ACQUIRE_BUSY_ACQUIRED_MS]) > 0)
		h->held_ms = lock_clamp(lock_to_ll(el[ACQUIRE_BUSY_NOW_MS]), 0,
		    LOCK_REPLY_MAX_TIME) -
		    lock_clamp(lock_to_ll(el[ACQUIRE_BUSY_ACQUIRED_MS]), 0,
		    LOCK_REPLY_MAX_TIME);
}

/*
 * Give back what this run took where it won too few servers, or too
 * late, to try again: its waiter entries stay, so that new readers stay
 * out meanwhile (see acquire.lua).  Errors do not matter here.
 */
static void
undo_partial(struct lock *l)
{
	struct err	e;

	lock_release_script(l, NULL, 1, 1, 0, &e);
}

/*
 * What a majority of grants still needs before it counts: servers told
 * apart, fences aligned, replicas' acknowledgements (--wait-replicas).
 * Returns ok, or -1 (e filled) after giving back what was taken.
 */
static int
confirm_grant(struct lock *l, int *won, const long long *fences,
    long long fence, int ok, struct err *e)
{
	int	n = l->q->n;

	/* One server under two names would vote twice: give back, refuse. */
	if (n > 1 && quorum_distinct(l->q, e) == -1) {
		lock_give_back(l);
		l->maybe_held = 0;
		return -1;
	}
	if (lock_count(won, n) >= quorum_majority(l->q) && n > 1)
		align_fences(l, won, fences, fence);
	if (lock_count(won, n) >= quorum_majority(l->q) && l->wait_replicas > 0) {
		lock_await_replicas(l, won);
		if (lock_count(won, n) < quorum_majority(l->q)) {
			err_set(e, ERR_UNAVAILABLE, "%s: fewer than %d "
			    "replica%s acknowledged the lock within %lldms "
			    "(--wait-replicas); it was released",
			    l->q->urls[0].display, l->wait_replicas,
			    l->wait_replicas == 1 ? "" : "s",
			    (long long)l->wait_timeout_ms);
			lock_give_back(l);
			return -1;
		}
	}
	return ok;
}

void
lock_history_args(const struct lock *l, struct history_args *h)
{
	snprintf(h->len, sizeof h->len, "%d", l->history_len);
	snprintf(h->ttl, sizeof h->ttl, "%lld", (long long)(l->history_ttl_ms > 0 ?
	    l->history_ttl_ms : 1));
}

/* The keys and arguments of acquire.lua, and the text they point into. */
struct acquire_args {
	const char		*args[ACQUIRE__COUNT];
	char			 ttl[24], pid[24], slack[24], waited[24], limit[16];
	char			 every[24], pending[16], fired[24];
	char			 floor[24];
	struct history_args	 h;
};

static void
acquire_args(const struct lock *l, int64_t ttl_ms, const struct lock_meta *m,
    struct acquire_args *a)
{
	snprintf(a->ttl, sizeof a->ttl, "%lld", (long long)ttl_ms);
	snprintf(a->pid, sizeof a->pid, "%lld", m->pid);
	/* One that will wait is listed for its lease; 0: not listed. */
	snprintf(a->slack, sizeof a->slack, "%lld", l->wait_ms == 0 ? 0LL :
	    (long long)(WAITER_RENEW_MS + (l->q->opts->timeout_ms <
	    WAITER_TRIP_MS ? l->q->opts->timeout_ms : WAITER_TRIP_MS) +
	    WAITER_SLACK_MS));
	/* A first answer has waited for nothing, however long it took. */
	snprintf(a->waited, sizeof a->waited, "%lld", !l->was_busy ? 0LL :
	    (long long)(now_mono_ms() - l->wait_start));
	a->args[ACQUIRE_TOKEN] = l->token;
	a->args[ACQUIRE_TTL_MS] = a->ttl;
	a->args[ACQUIRE_HOST] = m->host;
	a->args[ACQUIRE_PID] = a->pid;
	a->args[ACQUIRE_USER] = m->user;
	a->args[ACQUIRE_COMMAND] = m->command;
	a->args[ACQUIRE_SLACK_MS] = a->slack;
	a->args[ACQUIRE_WAITED_MS] = a->waited;
	a->args[ACQUIRE_FIFO] = l->fifo && l->wait_ms != 0 ? "1" : "0";
	snprintf(a->limit, sizeof a->limit, "%d", l->limit > 1 ? l->limit : 1);
	a->args[ACQUIRE_LIMIT] = a->limit;
	/* Listed by an earlier attempt: the grant takes it off the list. */
	a->args[ACQUIRE_LISTED] = l->listed ? "1" : "0";
	a->args[ACQUIRE_SHARED] = l->shared ? "1" : "0";
	lock_history_args(l, &a->h);
	a->args[ACQUIRE_HISTORY_LEN] = a->h.len;
	a->args[ACQUIRE_HISTORY_TTL_MS] = a->h.ttl;
	/*
	 * A quorum's servers each hand out their own fence; proposing one
	 * floor to all of them, a second ahead of our clock (theirs are
	 * within that, with NTP), makes them agree, and align_fences has
	 * nothing to raise: no round trip of its own.
	 */
	snprintf(a->floor, sizeof a->floor, "%lld", l->q->n > 1 ?
	    (long long)(now_wall_ms() + FENCE_LEAD_MS) * 1000 : 0LL);
	a->args[ACQUIRE_FENCE_FLOOR_US] = a->floor;
	a->args[ACQUIRE_RUN] = l->run;
	/* A quorum's winner stays listed where it won: see acquire.lua. */
	a->args[ACQUIRE_KEEP_LISTED] = l->q->n > 1 ? "1" : "0";
	snprintf(a->every, sizeof a->every, "%lld", (long long)l->every_ms);
	a->args[ACQUIRE_EVERY] = a->every;
	a->args[ACQUIRE_RETRY] = l->retry_failed ? "1" : "0";
	snprintf(a->pending, sizeof a->pending, "%d", l->pending);
	a->args[ACQUIRE_PENDING] = a->pending;
	a->args[ACQUIRE_REPLACE] = l->replace ? "1" : "0";
	a->args[ACQUIRE_NO_REPLACE] = l->no_replace ? "1" : "0";
	/* Not known yet: how long ago it fired (-MS), or now (0). */
	snprintf(a->fired, sizeof a->fired, "%lld", l->fired_ms != 0 ?
	    l->fired_ms : l->fired_mono > 0 ?
	    -(long long)(now_mono_ms() - l->fired_mono) : 0LL);
	a->args[ACQUIRE_FIRED] = a->fired;
	a->args[ACQUIRE_SLOTS] = l->slots;
	a->args[ACQUIRE_CRON] = l->cron != NULL ? l->cron : "";
	a->args[ACQUIRE_CRON_TZ] = l->cron_tz != NULL ? l->cron_tz : "";
}

/*
 * The list a waiter blocks on besides the lock's own: its wake:TOKEN,
 * where it is woken by name when a release hands it the lock (see
 * hand_over() in lib.lua), at its turn in the --fifo line, and, waiting
 * for an exclusive hold, when the last reader of a shared lock leaves.
 */
const char *
lock_own_wake(const struct lock *l)
{
	return l->own_wake_key;
}

/* How a lock is held or asked for, by its limit (0: --shared). */
static void
kind_text(char *buf, size_t len, long long limit)
{
	if (limit > 1)
		snprintf(buf, len, "--limit %lld", limit);
	else
		snprintf(buf, len, "%s", limit == 0 ? "--shared" : "no --limit");
}

/*
 * acquire_mix: the lock is held with another --limit (a plain lock is 1,
 * a shared one 0).  Nothing was taken; it is a usage error, said once.
 */
static int
mixed_limit(const struct lock *l, const struct redis_reply *r, struct err *e)
{
	char		was[32], now[32];

	if (r == NULL || r->type != REDIS_T_ARRAY ||
	    r->elements < ACQUIRE_MIX__COUNT ||
	    r->element[ACQUIRE_MIX_CODE]->integer != -1)
		return 0;
	kind_text(was, sizeof was, r->element[ACQUIRE_MIX_LIMIT]->integer);
	kind_text(now, sizeof now, l->shared ? 0 : l->limit > 1 ? l->limit : 1);
	err_set(e, ERR_USAGE, "%s is held with %s, and this asks with %s; "
	    "%s", l->name, was, now, strcmp(was, "--shared") == 0 ||
	    strcmp(now, "--shared") == 0 ? "a shared lock and a semaphore do "
	    "not mix (use another name)" : "every holder of a lock must give "
	    "the same --limit");
	return 1;
}

/*
 * acquire_upgrade: the caller reads NAME and asked to upgrade while
 * another reader's upgrade waits, which only the end of this reader's
 * shared hold can let in (as fcntl(2) answers EDEADLK).  Nothing was
 * taken; the caller stays a reader.
 */
static int
upgrade_refused(const struct lock *l, const struct redis_reply *r,
    struct err *e)
{
	char	who[160] = "";

	if (r == NULL || r->type != REDIS_T_ARRAY ||
	    r->elements < ACQUIRE_UPGRADE__COUNT ||
	    r->element[ACQUIRE_UPGRADE_CODE]->integer != -3)
		return 0;
	if (r->element[ACQUIRE_UPGRADE_HOST]->type == REDIS_T_STRING &&
	    r->element[ACQUIRE_UPGRADE_PID]->type == REDIS_T_STRING)
		snprintf(who, sizeof who, " (%.100s, pid %.20s)",
		    r->element[ACQUIRE_UPGRADE_HOST]->str,
		    r->element[ACQUIRE_UPGRADE_PID]->str);
	err_set(e, ERR_DEADLOCK, "cannot upgrade %s: another reader%s is "
	    "already waiting to upgrade, and each would wait for the other; "
	    "release this shared hold (rlock release --token) and acquire "
	    "again", l->name, who);
	return 1;
}

/* Remember when and where the period's run started, from a refusal. */
static void
note_started(struct lock *l, const struct redis_reply *r)
{
	struct redis_reply	*const *el = r->element;

	/* A pause (rlock schedule pause), on any server, is the news. */
	if (r->elements >= ACQUIRE_SKIPPED__COUNT &&
	    lock_int_at(r, ACQUIRE_SKIPPED_PAUSED_UNTIL_MS, -1,
	    LOCK_REPLY_MAX_TIME) &&
	    el[ACQUIRE_SKIPPED_PAUSED_UNTIL_MS]->integer != 0) {
		l->paused_until_ms = el[ACQUIRE_SKIPPED_PAUSED_UNTIL_MS]->integer;
		if (el[ACQUIRE_SKIPPED_PAUSED_BY]->type == REDIS_T_STRING)
			snprintf(l->paused_by, sizeof l->paused_by, "%s",
			    el[ACQUIRE_SKIPPED_PAUSED_BY]->str);
	}
	if (l->refused && el[ACQUIRE_SKIPPED_STARTED_MS]->integer <=
	    l->started_ms)
		return;		/* the newest start, of all the servers' */
	l->refused = 1;
	l->started_ms = el[ACQUIRE_SKIPPED_STARTED_MS]->integer;
	l->started_ago_ms = el[ACQUIRE_SKIPPED_NOW_MS]->integer -
	    el[ACQUIRE_SKIPPED_STARTED_MS]->integer;
	l->started_host[0] = '\0';
	if (el[ACQUIRE_SKIPPED_HOST]->type == REDIS_T_STRING)
		snprintf(l->started_host, sizeof l->started_host, "%s",
		    el[ACQUIRE_SKIPPED_HOST]->str);
	l->started_pid = lock_to_ll(el[ACQUIRE_SKIPPED_PID]);
}

/* Remember who superseded this waiter, from acquire_superseded. */
static void
note_superseded(struct lock *l, const struct redis_reply *r)
{
	struct redis_reply	*const *el = r->element;

	if (l->superseded)
		return;		/* the first server's word is enough */
	l->superseded = 1;
	snprintf(l->superseded_host, sizeof l->superseded_host, "%s",
	    el[ACQUIRE_SUPERSEDED_HOST]->type == REDIS_T_STRING ?
	    el[ACQUIRE_SUPERSEDED_HOST]->str : "?");
	snprintf(l->superseded_pid, sizeof l->superseded_pid, "%s",
	    el[ACQUIRE_SUPERSEDED_PID]->type == REDIS_T_STRING ?
	    el[ACQUIRE_SUPERSEDED_PID]->str : "?");
}

/*
 * One attempt, after blocking on the wake list for at most wait_ms when
 * wait_ms >= 0 (one server only: see lock_acquire).  Returns 1 held, 0
 * busy (*pttl_ms: how long until the lock may expire, -1 if it has no
 * expiry), 2 refused by --every (nothing held, nothing listed), 3
 * superseded by a newer waiter (--pending: the same), -1 error.
 */
static int
try_acquire(struct lock *l, int64_t ttl_ms, const struct lock_meta *m,
    int64_t wait_ms, int64_t *pttl_ms, struct err *e)
{
	struct acquire_args	  a;
	struct redis_reply	**rep;
	long long		  fence = 0, *fences;
	int64_t			  start, validity;
	int			  i, ok, got, *won, n = l->q->n, refusals = 0;
	int			  listed = l->listed, blocked = 0;
	unsigned		  bmask = 0;

	acquire_args(l, ttl_ms, m, &a);
	rep = xcalloc(n, sizeof *rep);
	won = xcalloc(n, sizeof *won);
	fences = xcalloc(n, sizeof *fences);
	*pttl_ms = -2;
	/* Before sending: see the invariants at the top. */
	start = now_mono_ms();
	l->maybe_held = 1;
	l->tried = 1;
	ok = quorum_run(l->q, &(struct quorum_req){ .script =
	    l->every_ms > 0 ? &script_acquire_every : &script_acquire,
	    .nkeys = KEY__COUNT, .keys = lock_keys(l),
	    .nargs = acquire_nargs(a.args), .args = a.args,
	    .settled = lock_settled_grant,
	    .wait_key = wait_ms >= 0 ? l->wake_key : NULL,
	    .wait_key2 = lock_own_wake(l), .wait_ms = wait_ms }, rep, e);
	ok = quorum_check(l->q, rep, acquire_shape, NULL, "the acquire script",
	    ok, e);
	/* Servers given up unanswered (blocked): busy, not failed. */
	for (i = 0; wait_ms >= 0 && i < n; i++)
		if (l->q->blocked[i]) {
			bmask |= 1u << i;
			blocked++;
		}
	l->listed |= l->wait_ms != 0;
	for (i = 0; i < n; i++) {
		if (mixed_limit(l, rep[i], e) ||
		    upgrade_refused(l, rep[i], e)) {
			quorum_free_replies(l->q, rep);
			free(rep);
			free(won);
			free(fences);
			l->maybe_held = 0;
			/*
			 * The refusing server took the upgrade's entry off;
			 * the others of a quorum may have listed it.
			 */
			if (e->kind == ERR_DEADLOCK && n > 1)
				lock_unlist(l);
			l->listed = 0;
			return -1;
		}
		if (rep[i] != NULL &&
		    rep[i]->element[ACQUIRE_SKIPPED_CODE]->integer == -2) {
			note_started(l, rep[i]);
			refusals++;
		}
		if (rep[i] != NULL &&
		    rep[i]->element[ACQUIRE_SUPERSEDED_CODE]->integer == -4)
			note_superseded(l, rep[i]);
		/* The slot this run fired in: its first answer's clock. */
		if (rep[i] != NULL && l->fired_ms == 0 &&
		    rep[i]->element[ACQUIRE_BUSY_CODE]->integer == 0 &&
		    lock_int_at(rep[i], ACQUIRE_BUSY_NOW_MS, 1,
		    LOCK_REPLY_MAX_TIME))
			l->fired_ms = rep[i]->element[ACQUIRE_BUSY_NOW_MS]->integer -
			    (l->fired_mono > 0 ? start - l->fired_mono : 0);
		if ((won[i] = lock_reply_granted(rep[i], &fences[i])))
			fence = fences[i] > fence ? fences[i] : fence;
		else if (rep[i] != NULL &&
		    rep[i]->element[ACQUIRE_BUSY_CODE]->integer == 0 &&
		    rep[i]->element[ACQUIRE_BUSY_PTTL_MS]->integer > *pttl_ms) {
			*pttl_ms = lock_clamp(
			    rep[i]->element[ACQUIRE_BUSY_PTTL_MS]->integer, -2,
			    LOCK_REPLY_MAX_TTL);
			note_holder(l, rep[i]);
		}
	}
	quorum_free_replies(l->q, rep);
	free(rep);
	ok = confirm_grant(l, won, fences, fence, ok, e);
	got = lock_count(won, n);
	free(fences);
	if (ok == -1) {
		free(won);
		return -1;
	}

	validity = ttl_ms - (now_mono_ms() - start) - lock_drift(ttl_ms);
	if (got >= quorum_majority(l->q) && validity > 0) {
		/*
		 * A server given up unanswered may have run the script:
		 * won, as far as the loss rule goes (majority_left), until
		 * it says "not the holder".
		 */
		l->won = 0;
		for (i = 0; i < n; i++)
			if (won[i] || (bmask & 1u << i))
				l->won |= 1u << i;
		l->won_known = 1;
		free(won);
		l->listed = 0;	/* the grant took us off the list */
		l->maybe_held = 0;
		l->fence = fence;
		l->ttl_ms = ttl_ms;
		l->acquired_at = start;
		l->taken_at = now_mono_ms();
		l->valid_until = start + ttl_ms - lock_drift(ttl_ms);
		return 1;
	}
	free(won);
	if (l->superseded) {
		/*
		 * A newer waiter took this one's place (on one server of a
		 * quorum at least: the others will say so too): give back
		 * what it took anywhere, its places among the waiters and
		 * the marks saying so (acquire.lua keeps a mark until then,
		 * so that an attempt sent again after the answer was lost is
		 * answered the same), and go.  (A grant on a majority came
		 * first, above.)
		 */
		lock_give_back(l);
		l->listed = 0;
		l->maybe_held = 0;
		return 3;
	}
	if (refusals > 0 && ok >= quorum_majority(l->q)) {
		/*
		 * The period's run has started (on one server of a quorum
		 * at least, where that run won): give back what this one
		 * took anywhere, and its places among the waiters (a lock
		 * handed over to it among them), and go.
		 */
		if (got > 0 || ok < n || listed)
			lock_give_back(l);
		l->listed = 0;
		l->maybe_held = 0;
		return 2;
	}
	if (ok + blocked < quorum_majority(l->q))
		return -1;	/* maybe_held stays set: release to be safe */
	if (ok < quorum_majority(l->q))
		err_clear(e);	/* what the blocked ones would say: busy */
	/*
	 * Too few servers, or too late: give back what was taken, everywhere
	 * (a server that timed out may have taken it too, and so may one
	 * given up unanswered after a wait), and try again.
	 */
	if (got > 0 || ok < n)
		undo_partial(l);
	l->maybe_held = 0;
	if (*pttl_ms == -2)
		*pttl_ms = 0;
	/* Granted, but the validity was spent on the way: see LATE_MAX. */
	l->late = got >= quorum_majority(l->q) ? l->late + 1 : 0;
	return 0;
}

int
lock_acquire(struct lock *l, int64_t ttl_ms, int64_t wait_ms,
    const struct lock_meta *m, struct err *e)
{
	static unsigned	runs;
	struct timespec	ts;
	int64_t	deadline, left, pttl, sleep = -1, start;
	int64_t	pause = RIDE_FIRST_MS, retry_by = -1;
	int	rc, rides = 0, answered = 0;

	/*
	 * The run's id: only told apart from the token's other runs, so
	 * this process, the moment and a count suffice (no random bytes
	 * to wait for); before the wait's start, which the history counts
	 * from.
	 */
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(l->run, sizeof l->run, "%x.%llx.%lx.%x", (unsigned)getpid(),
	    (long long)ts.tv_sec, (long)ts.tv_nsec, runs++);
	start = now_mono_ms();
	deadline = wait_ms < 0 ? -1 : start + wait_ms;
	l->late = 0;
	l->wait_errors = 0;
	l->wait_why[0] = '\0';
	l->wait_ms = wait_ms;
	l->wait_start = start;
	l->was_busy = 0;
	l->refused = 0;
	l->superseded = 0;
	l->fired_ms = 0;
	l->paused_until_ms = 0;
	l->meta = *m;
	for (;;) {
		if ((rc = try_acquire(l, ttl_ms, m, sleep, &pttl, e)) == -1 &&
		    lock_ride_through(l, wait_ms == 0 ? lock_own_retry_by(l, &retry_by) :
		    deadline, &pause, &rides, answered, e) == 0) {
			/* The server comes back, or another stands in. */
			sleep = -1;
			continue;
		}
		if (rc == 2 || rc == 3)
			return 0;	/* --every's l->refused, l->superseded */
		if (rc != 0)
			return rc;
		if (sleep >= 0)
			lock_note_wait(l);	/* the attempt went behind a BLPOP */
		answered = 1;
		l->was_busy = 1;
		pause = RIDE_FIRST_MS;
		if (l->late >= LATE_MAX) {
			err_set(e, ERR_UNAVAILABLE, "%s: the lock was granted "
			    "%d times but each grant came after its validity "
			    "(--ttl %lldms less the drift margin) had run out; "
			    "use a longer --ttl or a nearer server",
			    l->q->urls[0].display, l->late, (long long)ttl_ms);
			return -1;
		}
		if (l->late > 0) {
			/* Not busy: a pause of our own, whatever --wait. */
			if (lock_pause_ms(LATE_PAUSE_MS << (l->late - 1), e) == -1)
				return -1;
			sleep = -1;
			continue;
		}
		if (wait_ms == 0)
			return 0;
		if (l->wait_errors > 0 && lock_wait_error_pause(l, deadline, e) == -1)
			return -1;
		if (deadline < 0)
			left = INT64_MAX;
		else if ((left = deadline - now_mono_ms()) <= 0) {
			lock_unlist(l);
			/* Busy, but what kept us from waiting is the news. */
			if (l->wait_errors == 0)
				return 0;
			err_set(e, ERR_UNAVAILABLE, "%s", l->wait_why);
			return -1;
		}
		/*
		 * Sleep on the wake list: a release pushes to it, so we are
		 * woken at once; otherwise the lock can only become free by
		 * expiring, which it cannot do before its PTTL.  The list
		 * keeps the push until someone pops it, so a release between
		 * the failed attempt and the BLPOP is not missed.  Jitter
		 * spreads waiters that all wake at one expiry.
		 */
		if (pttl >= 0)
			sleep = pttl + 1 + lock_jitter();
		else if (pttl == -1)
			sleep = NO_EXPIRY_RECHECK_MS;
		else
			sleep = 1 + lock_jitter();
		/* The next attempt renews our lease: see WAITER_RENEW_MS. */
		if (sleep > WAITER_RENEW_MS)
			sleep = WAITER_RENEW_MS + lock_jitter();
		if (sleep > left)
			sleep = left;
		l->waited++;
		/*
		 * The BLPOP goes out with the next attempt, on every server,
		 * so a woken waiter's try is already made when it wakes: a
		 * hand-over costs no round trip of its own.  (With several
		 * servers, see quorum_run's wait_key: a server woken gives the
		 * others' wakes a moment, and those that did not come are
		 * given up and counted busy.)
		 */
		sleep = lock_wait_chunk(l, start, deadline, sleep, ttl_ms);
	}
}
