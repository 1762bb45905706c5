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
 *    lengthens it past the server's.
 *  - Every key of a lock carries the hash tag {NAME}, so each script touches
 *    one Redis Cluster slot.
 */

#include <uuid/uuid.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lock.h"
#include "scripts.h"
#include "util.h"

/* When a lock has no expiry (set by hand), look again this often. */
#define NO_EXPIRY_RECHECK_MS	5000
/* Waiters woken by expiry spread their retries over this much. */
#define JITTER_MS		20

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
	memset(l, 0, sizeof *l);
	l->q = q;
	l->name = name;
	xasprintf(&l->key, "%s{%s}", prefix, name);
	xasprintf(&l->fence_key, "%s{%s}:fence", prefix, name);
	xasprintf(&l->info_key, "%s{%s}:info", prefix, name);
	xasprintf(&l->wake_key, "%s{%s}:wake", prefix, name);
	if (token != NULL)
		snprintf(l->token, sizeof l->token, "%s", token);
}

void
lock_free(struct lock *l)
{
	free(l->key);
	free(l->fence_key);
	free(l->info_key);
	free(l->wake_key);
}

static unsigned
jitter(void)
{
	static __thread unsigned	seed;

	if (seed == 0)
		seed = (unsigned)now_mono_ms() ^ ((unsigned)getpid() << 16);
	return (unsigned)rand_r(&seed) % (JITTER_MS + 1);
}

/* Is r the array {1, fence, ttl} that acquire and extend answer with? */
static int
granted(const struct redis_reply *r, long long *fence)
{
	if (r == NULL || r->type != REDIS_T_ARRAY || r->elements < 1 ||
	    r->element[0]->integer != 1)
		return 0;
	if (r->elements >= 2 && r->element[1]->integer > *fence)
		*fence = r->element[1]->integer;
	return 1;
}

static int
count(const int *v, int n)
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
	const char		 *keys[3], *args[2];
	char			  fs[24];
	struct err		  e;
	int			  i, *low, any = 0;

	low = xcalloc(l->q->n, sizeof *low);
	for (i = 0; i < l->q->n; i++)
		any |= low[i] = won[i] && fences[i] < f;
	if (any) {
		keys[0] = l->fence_key;
		keys[1] = l->info_key;
		keys[2] = l->key;
		snprintf(fs, sizeof fs, "%lld", f);
		args[0] = l->token;
		args[1] = fs;
		rep = xcalloc(l->q->n, sizeof *rep);
		quorum_script(l->q, low, &script_fence, 3, keys, 2, args, rep,
		    &e);
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
static void
await_replicas(struct lock *l, int *won)
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

/* Give back what a failed quorum acquire took; errors do not matter here. */
static void
undo_partial(struct lock *l)
{
	struct err	e;

	lock_release(l, &e);
	l->held = 0;
}

/*
 * One attempt.  Returns 1 held, 0 busy (*pttl_ms: how long until the
 * lock may expire, -1 if it has no expiry), -1 error.
 */
static int
try_acquire(struct lock *l, int64_t ttl_ms, const struct lock_meta *m,
    int64_t *pttl_ms, struct err *e)
{
	struct redis_reply	**rep;
	const char		 *keys[4], *args[6];
	char			  ttl[24], pid[24];
	long long		  fence = 0, *fences;
	int64_t			  start, validity;
	int			  i, ok, got, *won, n = l->q->n;

	keys[0] = l->key;
	keys[1] = l->fence_key;
	keys[2] = l->info_key;
	keys[3] = l->wake_key;
	snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
	snprintf(pid, sizeof pid, "%lld", m->pid);
	args[0] = l->token;
	args[1] = ttl;
	args[2] = m->host;
	args[3] = pid;
	args[4] = m->user;
	args[5] = m->command;

	rep = xcalloc(n, sizeof *rep);
	won = xcalloc(n, sizeof *won);
	fences = xcalloc(n, sizeof *fences);
	*pttl_ms = -2;
	/* Before sending: see the invariants at the top. */
	start = now_mono_ms();
	l->maybe_held = 1;
	ok = quorum_script(l->q, NULL, &script_acquire, 4, keys, 6, args, rep,
	    e);
	for (i = 0; i < n; i++) {
		if ((won[i] = granted(rep[i], &fences[i])))
			fence = fences[i] > fence ? fences[i] : fence;
		else if (rep[i] != NULL && rep[i]->elements >= 2 &&
		    rep[i]->element[1]->integer > *pttl_ms)
			*pttl_ms = rep[i]->element[1]->integer;
	}
	quorum_free_replies(l->q, rep);
	free(rep);
	if (count(won, n) >= quorum_majority(l->q) && n > 1)
		align_fences(l, won, fences, fence);
	if (count(won, n) >= quorum_majority(l->q) && l->wait_replicas > 0) {
		await_replicas(l, won);
		if (count(won, n) < quorum_majority(l->q)) {
			err_set(e, ERR_UNAVAILABLE, "%s: fewer than %d replicas "
			    "acknowledged the lock within %lldms "
			    "(--wait-replicas); it was released",
			    redis_display(l->q->conn[0]), l->wait_replicas,
			    (long long)l->wait_timeout_ms);
			undo_partial(l);
			ok = -1;
		}
	}
	got = count(won, n);
	free(won);
	free(fences);
	if (ok == -1)
		return -1;

	validity = ttl_ms - (now_mono_ms() - start) - lock_drift(ttl_ms);
	if (got >= quorum_majority(l->q) && validity > 0) {
		l->held = 1;
		l->maybe_held = 0;
		l->fence = fence;
		l->ttl_ms = ttl_ms;
		l->acquired_at = start;
		l->valid_until = start + ttl_ms - lock_drift(ttl_ms);
		return 1;
	}
	if (ok < quorum_majority(l->q))
		return -1;	/* maybe_held stays set: release to be safe */
	/*
	 * Too few servers, or too late: give back what was taken, everywhere
	 * (a server that timed out may have taken it too), and try again.
	 */
	if (got > 0 || ok < n)
		undo_partial(l);
	l->maybe_held = 0;
	if (*pttl_ms == -2)
		*pttl_ms = 0;
	return 0;
}

int
lock_acquire(struct lock *l, int64_t ttl_ms, int64_t wait_ms,
    const struct lock_meta *m, struct err *e)
{
	int64_t	deadline, left, pttl, sleep;
	int	rc;

	deadline = wait_ms < 0 ? -1 : now_mono_ms() + wait_ms;
	for (;;) {
		if ((rc = try_acquire(l, ttl_ms, m, &pttl, e)) != 0)
			return rc;
		if (wait_ms == 0)
			return 0;
		if (deadline < 0)
			left = INT64_MAX;
		else if ((left = deadline - now_mono_ms()) <= 0)
			return 0;
		/*
		 * Sleep on the wake list: a release pushes to it, so we are
		 * woken at once; otherwise the lock can only become free by
		 * expiring, which it cannot do before its PTTL.  The list
		 * keeps the push until someone pops it, so a release between
		 * the failed attempt and the BLPOP is not missed.  Jitter
		 * spreads waiters that all wake at one expiry.
		 */
		if (pttl >= 0)
			sleep = pttl + 1 + jitter();
		else if (pttl == -1)
			sleep = NO_EXPIRY_RECHECK_MS;
		else
			sleep = 1 + jitter();
		if (sleep > left)
			sleep = left;
		if (quorum_wait(l->q, l->wake_key, sleep, e) == -1)
			return -1;
	}
}

int
lock_release(struct lock *l, struct err *e)
{
	struct redis_reply	**rep;
	const char		 *keys[3], *args[1];
	int			  i, ok, released = 0;

	keys[0] = l->key;
	keys[1] = l->info_key;
	keys[2] = l->wake_key;
	args[0] = l->token;
	rep = xcalloc(l->q->n, sizeof *rep);
	ok = quorum_script(l->q, NULL, &script_release, 3, keys, 1, args, rep, e);
	for (i = 0; i < l->q->n; i++)
		if (rep[i] != NULL && rep[i]->type == REDIS_T_INTEGER &&
		    rep[i]->integer == 1)
			released++;
	quorum_free_replies(l->q, rep);
	free(rep);
	if (ok < quorum_majority(l->q))
		return -1;
	l->held = 0;
	l->maybe_held = 0;
	return released >= quorum_majority(l->q);
}

int
lock_extend(struct lock *l, int64_t ttl_ms, struct err *e)
{
	struct redis_reply	**rep;
	const char		 *keys[2], *args[3];
	char			  ttl[24], fallback[24];
	long long		  fence = 0, new_ttl = 0;
	int64_t			  start;
	int			  i, ok, got = 0;

	keys[0] = l->key;
	keys[1] = l->info_key;
	snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
	snprintf(fallback, sizeof fallback, "%lld",
	    (long long)(l->ttl_ms > 0 ? l->ttl_ms : 30000));
	args[0] = l->token;
	args[1] = ttl;
	args[2] = fallback;
	rep = xcalloc(l->q->n, sizeof *rep);
	start = now_mono_ms();
	ok = quorum_script(l->q, NULL, &script_extend, 2, keys, 3, args, rep, e);
	for (i = 0; i < l->q->n; i++) {
		if (!granted(rep[i], &fence))
			continue;
		got++;
		if (rep[i]->elements >= 3)
			new_ttl = rep[i]->element[2]->integer;
	}
	quorum_free_replies(l->q, rep);
	free(rep);
	if (ok < quorum_majority(l->q))
		return -1;
	if (got < quorum_majority(l->q))
		return 0;
	l->held = 1;
	l->fence = fence;
	l->ttl_ms = new_ttl;
	l->valid_until = start + new_ttl - lock_drift(new_ttl);
	return 1;
}

static char *
dup_str(const struct redis_reply *r)
{
	if (r == NULL || r->type != REDIS_T_STRING)
		return NULL;
	return xstrndup(r->str, r->len);
}

static long long
to_ll(const struct redis_reply *r)
{
	if (r == NULL)
		return 0;
	if (r->type == REDIS_T_INTEGER)
		return r->integer;
	if (r->type == REDIS_T_STRING)
		return strtoll(r->str, NULL, 10);
	return 0;
}

/* Fill st from the reply shape inspect.lua and force.lua share. */
static void
parse_status(const struct redis_reply *r, struct lock_status *st)
{
	struct redis_reply	*const *el = r->element;

	if (r->elements < 4)
		return;
	st->held = to_ll(el[0]) == 1;
	st->pttl_ms = to_ll(el[1]);
	st->last_fence = to_ll(el[2]);
	st->now_ms = to_ll(el[3]);
	if (!st->held || r->elements < 11)
		return;
	st->host = dup_str(el[4]);
	st->pid = to_ll(el[5]);
	st->user = dup_str(el[6]);
	st->command = dup_str(el[7]);
	st->acquired_ms = to_ll(el[8]);
	st->ttl_ms = to_ll(el[9]);
	st->fence = to_ll(el[10]);
}

/*
 * Run inspect or force and describe the lock from the first server that
 * answered.
 * TODO(quorum): with several servers, show what the majority says.
 */
static int
status_script(struct lock *l, struct script *s, struct lock_status *st,
    struct err *e)
{
	struct redis_reply	**rep;
	const char		 *keys[4];
	int			  i, ok;

	memset(st, 0, sizeof *st);
	st->name = xstrdup(l->name);
	keys[0] = l->key;
	keys[1] = l->info_key;
	keys[2] = l->fence_key;
	keys[3] = l->wake_key;
	rep = xcalloc(l->q->n, sizeof *rep);
	ok = quorum_script(l->q, NULL, s, s == &script_force ? 4 : 3, keys, 0, NULL,
	    rep, e);
	for (i = 0; i < l->q->n; i++) {
		if (rep[i] != NULL && rep[i]->type == REDIS_T_ARRAY) {
			parse_status(rep[i], st);
			break;
		}
	}
	quorum_free_replies(l->q, rep);
	free(rep);
	return ok < quorum_majority(l->q) ? -1 : 0;
}

int
lock_inspect(struct lock *l, struct lock_status *st, struct err *e)
{
	return status_script(l, &script_inspect, st, e);
}

int
lock_force_release(struct lock *l, struct lock_status *st, struct err *e)
{
	if (status_script(l, &script_force, st, e) == -1)
		return -1;
	return st->held;
}

void
lock_status_free(struct lock_status *st)
{
	free(st->name);
	free(st->host);
	free(st->user);
	free(st->command);
	memset(st, 0, sizeof *st);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* SCAN's MATCH is a glob: the prefix is taken literally. */
static char *
scan_pattern(const char *prefix)
{
	struct buf	b;

	buf_init(&b);
	for (; *prefix != '\0'; prefix++) {
		if (strchr("*?[]\\", *prefix) != NULL)
			buf_add(&b, "\\", 1);
		buf_add(&b, prefix, 1);
	}
	buf_adds(&b, "{*}");
	return b.p;
}

/*
 * TODO(quorum): with several servers, list the union of what they hold.
 */
int
lock_list(struct quorum *q, const char *prefix, char ***names, size_t *count,
    struct err *e)
{
	struct redis_reply	*rr = NULL, *keys;
	struct redis		*r;
	char			*pattern, *cursor = xstrdup("0");
	size_t			 i, plen = strlen(prefix), klen, n = 0, cap = 0;
	char			**v = NULL;
	int			 rc = -1;

	pattern = scan_pattern(prefix);
	if ((r = quorum_conn(q, 0, e)) == NULL)
		goto out;
	do {
		rr = redis_commandv(r, e, "SCAN", cursor, "MATCH", pattern,
		    "COUNT", "1000", NULL);
		if (rr == NULL)
			goto out;
		if (rr->type != REDIS_T_ARRAY || rr->elements != 2 ||
		    rr->element[0]->type != REDIS_T_STRING ||
		    rr->element[1]->type != REDIS_T_ARRAY) {
			err_set(e, ERR_UNAVAILABLE, "%s: unexpected reply to "
			    "SCAN", redis_display(r));
			goto out;
		}
		free(cursor);
		cursor = xstrdup(rr->element[0]->str);
		keys = rr->element[1];
		for (i = 0; i < keys->elements; i++) {
			klen = keys->element[i]->len;
			if (klen < plen + 3 ||
			    memchr(keys->element[i]->str + plen + 1, '}',
			    klen - plen - 2) != NULL)
				continue;
			if (n == cap)
				v = xrealloc(v, (cap = cap ? 2 * cap : 16) *
				    sizeof *v);
			v[n++] = xstrndup(keys->element[i]->str + plen + 1,
			    klen - plen - 2);
		}
		redis_reply_free(rr);
		rr = NULL;
	} while (strcmp(cursor, "0") != 0);
	qsort(v, n, sizeof *v, cmp_names);
	/* SCAN may return a key twice; keep one of each. */
	for (i = 1, klen = n ? 1 : 0; i < n; i++) {
		if (strcmp(v[i], v[klen - 1]) == 0)
			free(v[i]);
		else
			v[klen++] = v[i];
	}
	*names = v;
	*count = klen;
	v = NULL;
	rc = 0;
out:
	if (v != NULL) {
		for (i = 0; i < n; i++)
			free(v[i]);
		free(v);
	}
	redis_reply_free(rr);
	free(pattern);
	free(cursor);
	return rc;
}
