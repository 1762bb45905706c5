/* inspect.c: reading locks back: status, forced release, listing. */

/*
 * Each lock's state in one script call per batch of locks (inspect.lua),
 * merged across a quorum's servers into one view; release --force through
 * force.lua; the listing by SCAN over the prefix.  lock.c writes locks,
 * this file only reads them (and force removes one).
 */

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cron.h"
#include "escape.h"
#include "lock.h"
#include "log.h"
#include "lock-private.h"
#include "scripts.h"
#include "signals.h"
#include "url.h"
#include "util.h"

/*
 * status: how many locks one inspect call covers (a round trip; the server
 * is busy some 5 ms with a thousand).
 */
#define INSPECT_BATCH		1000

static char *
dup_str(const struct redis_reply *r)
{
	if (r == NULL || r->type != REDIS_T_STRING)
		return NULL;
	return xstrndup(r->str, r->len);
}

/* A command as stored, by anyone: a URL's password in it masked. */
static char *
dup_command(const struct redis_reply *r)
{
	if (r == NULL || r->type != REDIS_T_STRING)
		return NULL;
	return url_mask_dup(r->str);
}

static struct lock_slot *
find_slot(const struct lock_status *st, const char *token)
{
	int	i;

	for (i = 0; i < st->nslots; i++)
		if (strcmp(st->slots[i].token, token) == 0)
			return &st->slots[i];
	return NULL;
}

/*
 * The holders of a semaphore or a shared lock, from an inspect reply's
 * holders, each once: a holder another server listed already gets
 * its vote.  Returns how many of them r lists.
 */
static int
add_slots(const struct redis_reply *r, struct lock_status *st)
{
	const struct redis_reply	*s, *list;
	struct redis_reply *const	*f;
	struct lock_slot		*ls;
	size_t				 i;
	int				 listed = 0;

	if (r == NULL || r->type != REDIS_T_ARRAY ||
	    r->elements <= STATUS_HOLDERS ||
	    (s = r->element[STATUS_HOLDERS])->type != REDIS_T_ARRAY ||
	    s->elements < HOLDERS__COUNT ||
	    (list = s->element[HOLDERS_LIST])->type != REDIS_T_ARRAY)
		return 0;
	st->limit = (int)lock_clamp(lock_to_ll(s->element[HOLDERS_LIMIT]), 0,
	    INT_MAX);
	st->shared = st->limit == 0;
	for (i = 0; i < list->elements; i++) {
		if (list->element[i]->type != REDIS_T_ARRAY ||
		    list->element[i]->elements < HOLDER__COUNT ||
		    list->element[i]->element[HOLDER_TOKEN]->type !=
		    REDIS_T_STRING)
			continue;
		f = list->element[i]->element;
		listed++;
		if ((ls = find_slot(st, f[HOLDER_TOKEN]->str)) != NULL) {
			ls->votes++;
			continue;
		}
		st->slots = xrealloc(st->slots, (st->nslots + 1) *
		    sizeof *st->slots);
		ls = &st->slots[st->nslots++];
		ls->token = xstrdup(f[HOLDER_TOKEN]->str);
		ls->votes = 1;
		ls->host = dup_str(f[HOLDER_HOST]);
		ls->pid = lock_to_ll(f[HOLDER_PID]);
		ls->user = dup_str(f[HOLDER_USER]);
		ls->command = dup_command(f[HOLDER_COMMAND]);
		ls->acquired_ms = lock_clamp(lock_to_ll(f[HOLDER_ACQUIRED_MS]),
		    0, LOCK_REPLY_MAX_TIME);
		ls->ttl_ms = lock_clamp(lock_to_ll(f[HOLDER_TTL_MS]), 0,
		    LOCK_REPLY_MAX_TIME);
		ls->fence = lock_to_ll(f[HOLDER_FENCE]);
		ls->pttl_ms = lock_clamp(lock_to_ll(f[HOLDER_PTTL_MS]), -2,
		    LOCK_REPLY_MAX_TIME);
	}
	return listed;
}

static void
free_slot(struct lock_slot *ls)
{
	free(ls->token);
	free(ls->host);
	free(ls->user);
	free(ls->command);
}

/*
 * In quorum mode a reader holds the lock only where a majority list it
 * (one that lost keeps its entries on a minority until they expire).
 */
static void
keep_majority_slots(struct lock_status *st, int majority)
{
	int	i, k;

	for (i = k = 0; i < st->nslots; i++)
		if (st->slots[i].votes >= majority)
			st->slots[k++] = st->slots[i];
		else
			free_slot(&st->slots[i]);
	st->nslots = k;
	if (st->shared)
		st->held = k > 0;
}

/* In line first, by place; then the others, longest waiting first. */
static int
cmp_waiters(const void *a, const void *b)
{
	const struct lock_waiter	*x = a, *y = b;

	if ((x->place > 0) != (y->place > 0))
		return x->place > 0 ? -1 : 1;
	if (x->place != y->place)
		return x->place < y->place ? -1 : 1;
	return (x->waiting_ms < y->waiting_ms) - (x->waiting_ms > y->waiting_ms);
}

/*
 * Add the waiters of an inspect reply (element 13: {token, host, pid,
 * user, command, waiting_ms} each) to st, once per token, leaving out the
 * holder (in quorum mode a holder may still be listed where it lost).
 */
static void
add_waiters(const struct redis_reply *r, struct lock_status *st,
    const char *holder)
{
	const struct redis_reply	*w;
	struct redis_reply *const	*f;
	struct lock_waiter		*lw;
	size_t				 i;
	int				 k, seen;

	if (r == NULL || r->type != REDIS_T_ARRAY ||
	    r->elements <= STATUS_WAITERS ||
	    (w = r->element[STATUS_WAITERS])->type != REDIS_T_ARRAY)
		return;
	for (i = 0; i < w->elements; i++) {
		if (w->element[i]->type != REDIS_T_ARRAY ||
		    w->element[i]->elements < WAITER__COUNT ||
		    w->element[i]->element[WAITER_TOKEN]->type !=
		    REDIS_T_STRING)
			continue;
		f = w->element[i]->element;
		if ((holder != NULL &&
		    strcmp(f[WAITER_TOKEN]->str, holder) == 0) ||
		    find_slot(st, f[WAITER_TOKEN]->str) != NULL)
			continue;
		for (seen = 0, k = 0; k < st->nwaiters && !seen; k++)
			seen = strcmp(st->waiters[k].token,
			    f[WAITER_TOKEN]->str) == 0;
		if (seen)
			continue;
		st->waiters = xrealloc(st->waiters, (st->nwaiters + 1) *
		    sizeof *st->waiters);
		lw = &st->waiters[st->nwaiters++];
		lw->token = xstrdup(f[WAITER_TOKEN]->str);
		lw->host = dup_str(f[WAITER_HOST]);
		lw->pid = lock_to_ll(f[WAITER_PID]);
		lw->user = dup_str(f[WAITER_USER]);
		lw->command = dup_command(f[WAITER_COMMAND]);
		lw->waiting_ms = lock_clamp(lock_to_ll(f[WAITER_WAITING_MS]), 0,
		    LOCK_REPLY_MAX_TIME);
		lw->place = lock_to_ll(f[WAITER_PLACE]);
	}
}

/*
 * The reply shape inspect.lua and force.lua share: {held, pttl, fence,
 * now, ...}, the holder's fields after (see lock_reply_status).
 */
static int
status_shape(const struct redis_reply *r, void *arg)
{
	(void)arg;
	return lock_int_at(r, STATUS_HELD, 0, 1) &&
	    lock_int_at(r, STATUS_PTTL_MS, -2, LLONG_MAX) &&
	    lock_int_at(r, STATUS_LAST_FENCE, LLONG_MIN, LLONG_MAX) &&
	    lock_int_at(r, STATUS_NOW_MS, LLONG_MIN, LLONG_MAX);
}

/* inspect.lua, for *(size_t *)arg locks: a status or an error each. */
static int
batch_shape(const struct redis_reply *r, void *arg)
{
	size_t	j;

	if (r->type != REDIS_T_ARRAY || r->elements != *(size_t *)arg)
		return 0;
	for (j = 0; j < r->elements; j++)
		if (r->element[j]->type != REDIS_T_ERROR &&
		    !status_shape(r->element[j], NULL))
			return 0;
	return 1;
}

/* Fill st from the reply shape inspect.lua and force.lua share. */
void
lock_reply_status(const struct redis_reply *r, struct lock_status *st)
{
	struct redis_reply	*const *el = r->element;

	if (r->elements < STATUS__COUNT)
		return;
	/* Bounded: status subtracts one time from another. */
	st->held = lock_to_ll(el[STATUS_HELD]) == 1;
	st->pttl_ms = lock_clamp(lock_to_ll(el[STATUS_PTTL_MS]), -2,
	    LOCK_REPLY_MAX_TIME);
	st->last_fence = lock_to_ll(el[STATUS_LAST_FENCE]);
	st->now_ms = lock_clamp(lock_to_ll(el[STATUS_NOW_MS]), 0,
	    LOCK_REPLY_MAX_TIME);
	if (!st->held)
		return;
	st->host = dup_str(el[STATUS_HOST]);
	st->pid = lock_to_ll(el[STATUS_PID]);
	st->user = dup_str(el[STATUS_USER]);
	st->command = dup_command(el[STATUS_COMMAND]);
	st->acquired_ms = lock_clamp(lock_to_ll(el[STATUS_ACQUIRED_MS]), 0,
	    LOCK_REPLY_MAX_TIME);
	st->ttl_ms = lock_clamp(lock_to_ll(el[STATUS_TTL_MS]), 0,
	    LOCK_REPLY_MAX_TIME);
	st->fence = lock_to_ll(el[STATUS_FENCE]);
	if (el[STATUS_REPLACE_HOST]->type == REDIS_T_STRING) {
		st->replace_host = dup_str(el[STATUS_REPLACE_HOST]);
		st->replace_pid = lock_to_ll(el[STATUS_REPLACE_PID]);
	}
}

static void	lock_status_clear_holder(struct lock_status *);

/*
 * inspect.lua's 15th element: {period_ms, last_start_ms, host, pid,
 * outcome} for a name run with --every, {} for one never.  Of a quorum's
 * servers, the newest start counts.
 */
/* Field i of a schedule reply e, a time or a count (min to a time), or 0. */
static long long
sched_int(const struct redis_reply *e, size_t i, long long min)
{
	return lock_int_at(e, i, min, LOCK_REPLY_MAX_TIME) ?
	    e->element[i]->integer : 0;
}

static void
add_schedule(const struct redis_reply *r, struct lock_status *st)
{
	const struct redis_reply	*e;

	if (r == NULL || r->type != REDIS_T_ARRAY ||
	    r->elements < STATUS__COUNT || st->damage != NULL)
		return;
	e = r->element[STATUS_SCHEDULE];
	/* (A schedule declared and never started: its last start 0.) */
	if (e->type != REDIS_T_ARRAY || e->elements < SCHEDULE__COUNT ||
	    !lock_int_at(e, SCHEDULE_PERIOD_MS, 1, LOCK_REPLY_MAX_TIME) ||
	    !lock_int_at(e, SCHEDULE_LAST_START_MS, 0, LOCK_REPLY_MAX_TIME) ||
	    (st->every_ms > 0 &&
	    e->element[SCHEDULE_LAST_START_MS]->integer <= st->last_start_ms))
		return;
	free(st->last_host);
	free(st->last_outcome);
	free(st->paused_by);
	st->slot_ms = sched_int(e, SCHEDULE_SLOT_MS, 0);
	st->grace_ms = sched_int(e, SCHEDULE_GRACE_MS, 0);
	st->declared_ms = sched_int(e, SCHEDULE_DECLARED_MS, 0);
	st->last_success_ms = sched_int(e, SCHEDULE_LAST_SUCCESS_MS, 0);
	st->failures = sched_int(e, SCHEDULE_FAILURES, 0);
	st->paused_until_ms = sched_int(e, SCHEDULE_PAUSED_UNTIL_MS, -1);
	st->paused_ms = sched_int(e, SCHEDULE_PAUSED_MS, 0);
	st->paused_by = dup_str(e->element[SCHEDULE_PAUSED_BY]);
	free(st->cron);
	free(st->cron_tz);
	st->cron = dup_str(e->element[SCHEDULE_CRON]);
	st->cron_tz = dup_str(e->element[SCHEDULE_CRON_TZ]);
	st->every_ms = e->element[SCHEDULE_PERIOD_MS]->integer;
	st->last_start_ms = e->element[SCHEDULE_LAST_START_MS]->integer;
	st->last_host = dup_str(e->element[SCHEDULE_HOST]);
	st->last_pid = lock_to_ll(e->element[SCHEDULE_PID]);
	st->last_outcome = dup_str(e->element[SCHEDULE_OUTCOME]);
}

static const char *
token_of(const struct redis_reply *r)
{
	if (r == NULL || r->type != REDIS_T_ARRAY ||
	    r->elements < STATUS__COUNT ||
	    r->element[STATUS_TOKEN]->type != REDIS_T_STRING)
		return NULL;
	return r->element[STATUS_TOKEN]->str;
}

/*
 * What the servers' replies (rep[i], NULL where one failed) say about l:
 * with one server, its answer is the lock.  With several, the lock is
 * held when a majority hold the same token, and is described by one of
 * them; each server's view is kept for status to show.
 */
static void
status_merge(struct lock *l, struct redis_reply **rep, struct lock_status *st)
{
	const char	*tok, *best = NULL;
	int		 i, j, n = l->q->n, votes, most = 0, pick = -1;
	int		*listed;

	memset(st, 0, sizeof *st);
	st->name = xstrdup(l->name);
	/* A lock whose keys a script found damaged is that, and no more. */
	for (i = 0; i < n; i++)
		if (rep[i] != NULL && rep[i]->type == REDIS_T_ERROR) {
			st->damage = lock_damage_words(rep[i]->str);
			return;
		}
	listed = xcalloc(n, sizeof *listed);
	for (i = 0; i < n; i++) {
		if ((tok = token_of(rep[i])) == NULL)
			continue;
		for (votes = 0, j = 0; j < n; j++)
			votes += token_of(rep[j]) != NULL &&
			    strcmp(token_of(rep[j]), tok) == 0;
		if (votes > most) {
			most = votes;
			best = tok;
			pick = i;
		}
	}
	if (n == 1 || most >= quorum_majority(l->q)) {
		for (i = 0; pick == -1 && i < n; i++)
			if (rep[i] != NULL && rep[i]->type == REDIS_T_ARRAY)
				pick = i;
		if (pick >= 0)
			lock_reply_status(rep[pick], st);
	} else {
		/* No majority: free, whatever a minority says. */
		for (i = 0; i < n; i++)
			if (rep[i] != NULL && rep[i]->type == REDIS_T_ARRAY) {
				lock_reply_status(rep[i], st);
				break;
			}
		lock_status_clear_holder(st);
		best = NULL;
	}
	for (i = 0; i < n; i++)
		listed[i] = add_slots(rep[i], st);
	keep_majority_slots(st, quorum_majority(l->q));
	for (i = 0; i < n; i++)
		add_waiters(rep[i], st, best != NULL ? best :
		    pick >= 0 ? token_of(rep[pick]) : NULL);
	if (st->nwaiters > 1)
		qsort(st->waiters, st->nwaiters, sizeof *st->waiters,
		    cmp_waiters);
	if (n > 1) {
		st->nservers = n;
		st->nodes = xcalloc(n, sizeof *st->nodes);
		for (i = 0; i < n; i++) {
			st->nodes[i].url = l->q->urls[i].display;
			if (rep[i] == NULL || rep[i]->type != REDIS_T_ARRAY) {
				st->nodes[i].state = NODE_UNREACHABLE;
				st->nodes[i].error = xstrdup(l->q->errs[i].msg);
			} else if (st->shared)
				st->nodes[i].state = listed[i] > 0 ? NODE_HOLDS :
				    NODE_FREE;
			else if ((tok = token_of(rep[i])) == NULL)
				st->nodes[i].state = NODE_FREE;
			else if (best != NULL && strcmp(tok, best) == 0)
				st->nodes[i].state = NODE_HOLDS;
			else
				st->nodes[i].state = NODE_OTHER;
			st->nholding += st->nodes[i].state == NODE_HOLDS;
			if (rep[i] != NULL && rep[i]->type == REDIS_T_ARRAY &&
			    rep[i]->elements > STATUS_LAST_FENCE &&
			    lock_to_ll(rep[i]->element[STATUS_LAST_FENCE]) >
			    st->last_fence)
				st->last_fence = lock_to_ll(
				    rep[i]->element[STATUS_LAST_FENCE]);
		}
	}
	free(listed);
}

/*
 * The damaged keys force.lua removed (its reply's removed, {key, what},
 * ...), from every server, a line each: "KEY (WHAT)"; NULL if none.
 */
static char *
removed_keys(struct redis_reply **rep, int n)
{
	struct redis_reply	*list, *k;
	struct buf		 b;
	size_t			 j;
	int			 i;
	char			*line;

	buf_init(&b);
	for (i = 0; i < n; i++) {
		if (rep[i] == NULL || rep[i]->type != REDIS_T_ARRAY ||
		    rep[i]->elements < STATUS__COUNT ||
		    (list = rep[i]->element[STATUS_REMOVED])->type !=
		    REDIS_T_ARRAY)
			continue;
		for (j = 0; j < list->elements; j++) {
			k = list->element[j];
			if (k->type != REDIS_T_ARRAY || k->elements < 2 ||
			    k->element[0]->type != REDIS_T_STRING ||
			    k->element[1]->type != REDIS_T_STRING)
				continue;
			xasprintf(&line, "%s (%s)\n", k->element[0]->str,
			    k->element[1]->str);
			/* Each once, whatever servers had it. */
			if (b.p == NULL || strstr(b.p, line) == NULL)
				buf_adds(&b, line);
			free(line);
		}
	}
	if (b.len > 0)
		return b.p;
	buf_free(&b);
	return NULL;
}

static int	  damage_seen;
static int	  damage_keeping;
static char	**damage_kept;
static size_t	  ndamage_kept;

void
lock_damage_report(const char *words)
{
	size_t	i;

	if (damage_keeping) {
		for (i = 0; i < ndamage_kept; i++)
			if (strcmp(damage_kept[i], words) == 0)
				return;
		damage_kept = xrealloc(damage_kept, (ndamage_kept + 1) *
		    sizeof *damage_kept);
		damage_kept[ndamage_kept++] = xstrdup(words);
		return;
	}
	log_error("%s", words);
	damage_seen++;
}

size_t
lock_damage_keep(int on, char ***kept)
{
	size_t	n = ndamage_kept;

	damage_keeping = on;
	if (kept != NULL)
		*kept = damage_kept;
	damage_kept = NULL;
	ndamage_kept = 0;
	return n;
}

int
lock_damage_count(void)
{
	return damage_seen;
}

char *
lock_damage_words(const char *reply)
{
	char	words[512];

	if (!redis_script_words(reply != NULL ? reply : "", words,
	    sizeof words))
		snprintf(words, sizeof words, "%s", reply != NULL ? reply : "");
	return xstrdup(words);
}

/* force on every server: st describes what it removed. */
static int
force_script(struct lock *l, struct lock_status *st, struct err *e)
{
	struct redis_reply	**rep;
	struct history_args	  h;
	const char		 *args[FORCE__COUNT];
	char			  pid[24];
	int			  ok;

	/* Who forces it, for the history. */
	lock_history_args(l, &h);
	snprintf(pid, sizeof pid, "%lld", l->meta.pid);
	args[FORCE_HOST] = lock_or_empty(l->meta.host);
	args[FORCE_PID] = pid;
	args[FORCE_USER] = lock_or_empty(l->meta.user);
	args[FORCE_HISTORY_LEN] = h.len;
	args[FORCE_HISTORY_TTL_MS] = h.ttl;
	rep = xcalloc(l->q->n, sizeof *rep);
	ok = quorum_run(l->q, &(struct quorum_req){ .script = &script_force,
	    .nkeys = KEY__COUNT, .keys = lock_keys(l), .nargs = FORCE__COUNT,
	    .args = args }, rep, e);
	ok = quorum_check(l->q, rep, status_shape, NULL, "the force script",
	    ok, e);
	status_merge(l, rep, st);
	st->damage = removed_keys(rep, l->q->n);
	quorum_free_replies(l->q, rep);
	free(rep);
	return ok < quorum_majority(l->q) ? -1 : 0;
}

/*
 * A --cron schedule's expression and zone, which status steps through for
 * the next due time (cmd.c): one the script's check of its form let by
 * that does not parse is damage, in its words; a zone this machine
 * has no files for is said.  Either way the lock is that, and no more:
 * its next due time, and so whether it is overdue, is not known here.
 */
static void
check_cron(const struct lock *l, struct lock_status *st)
{
	struct cron	 c;
	char		 why[200], *saved, *words, *name;

	if (st->damage != NULL || st->every_ms <= 0 || st->cron == NULL ||
	    *st->cron == '\0')
		return;
	/* (The remedy is the schedule's: release --force cannot parse it.) */
	if (cron_parse(st->cron, &c, why, sizeof why) == -1)
		xasprintf(&words, "the lock %s is damaged: %s holds \"%.60s\" "
		    "in e, not a crontab expression (%s), which rlock never "
		    "writes (another program or a person did); `rlock schedule "
		    "remove %s` removes the schedule", st->name, l->every_key,
		    st->cron, why, st->name);
	else if (cron_zone_enter(st->cron_tz, &saved) == -1) {
		xasprintf(&words, "the schedule of %s is in the time zone %.60s, "
		    "which this machine does not know (see /usr/share/zoneinfo):"
		    " its next due time cannot be worked out here; install the "
		    "zone's files (tzdata), or ask on a machine that has them",
		    st->name, st->cron_tz);
		cron_zone_leave(saved);
	} else {
		cron_zone_leave(saved);
		return;
	}
	name = xstrdup(st->name);
	lock_status_free(st);
	st->name = name;
	st->damage = words;
}

/*
 * The keys inspect.lua takes for locks l[0..n): KEY__COUNT a lock, in the
 * contract's order (to free).
 */
static const char **
inspect_keys(const struct lock *l, size_t n)
{
	const char	**keys;
	size_t		  j;

	keys = xcalloc(KEY__COUNT * n, sizeof *keys);
	for (j = 0; j < n; j++)
		memcpy(keys + KEY__COUNT * j, lock_keys(&l[j]),
		    KEY__COUNT * sizeof *keys);
	return keys;
}

/*
 * Inspect n locks in one script call on each server (keys[KEY__COUNT * j
 * ...] are
 * lock j's).  0 with st[0..n) filled; -1 with e filled, st untouched.
 * *crossslot is set when a Cluster refused keys of several slots.
 */
static int
inspect_batch(struct lock *l, size_t n, struct lock_status *st,
    int *crossslot, struct err *e)
{
	struct redis_reply	**rep, **one;
	const char		**keys;
	size_t			  j;
	int			  i, ok, q = l[0].q->n, cross = 0;

	memset(st, 0, n * sizeof *st);
	keys = inspect_keys(l, n);
	rep = xcalloc(q, sizeof *rep);
	one = xcalloc(q, sizeof *one);
	ok = quorum_run(l[0].q, &(struct quorum_req){
	    .script = &script_inspect, .nkeys = (int)(KEY__COUNT * n),
	    .keys = keys }, rep, e);
	ok = quorum_check(l[0].q, rep, batch_shape, &n, "the inspect script",
	    ok, e);
	/* A server's last error stays after a success: only failures count. */
	for (i = 0; i < q; i++)
		if (rep[i] == NULL &&
		    strstr(l[0].q->errs[i].msg, "CROSSSLOT") != NULL)
			cross = 1;
	*crossslot |= cross;
	if (ok >= quorum_majority(l[0].q) && !cross)
		for (j = 0; j < n; j++) {
			/* Each server's answer for lock j. */
			for (i = 0; i < q; i++)
				one[i] = rep[i] != NULL &&
				    rep[i]->type == REDIS_T_ARRAY &&
				    j < rep[i]->elements ? rep[i]->element[j] :
				    NULL;
			status_merge(&l[j], one, &st[j]);
			for (i = 0; i < q; i++)
				add_schedule(one[i], &st[j]);
			check_cron(&l[j], &st[j]);
		}
	quorum_free_replies(l[0].q, rep);
	free(rep);
	free(one);
	free(keys);
	return ok >= quorum_majority(l[0].q) && !cross ? 0 : -1;
}

/*
 * Redis Cluster: every master at once, each inspecting the locks it serves
 * in one call (see quorum_cluster_run; inspect.lua answers false for a
 * lock another master serves).  0 with st[0..n) filled, or -1 with nothing
 * to free (then one lock a call).
 */
static int
inspect_cluster(struct lock *l, size_t n, struct lock_status *st,
    struct err *e)
{
	struct redis_reply	**rep, *el;
	const char		**keys;
	size_t			  j;
	int			  nm, k, rc = 0;

	keys = inspect_keys(l, n);
	nm = quorum_cluster_run(l[0].q, &(struct quorum_req){
	    .script = &script_inspect, .nkeys = (int)(KEY__COUNT * n),
	    .keys = keys }, &rep, e);
	free(keys);
	if (nm == -1)
		return -1;
	memset(st, 0, n * sizeof *st);
	for (k = 0; k < nm; k++)
		if (rep[k]->type != REDIS_T_ARRAY || rep[k]->elements != n)
			rc = -1;
	/* Each lock from the master that serves it. */
	for (j = 0; rc == 0 && j < n; j++) {
		for (el = NULL, k = 0; k < nm && el == NULL; k++)
			if (status_shape(rep[k]->element[j], NULL) ||
			    rep[k]->element[j]->type == REDIS_T_ERROR)
				el = rep[k]->element[j];
		if (el == NULL)
			rc = -1;	/* no master said it serves it */
		else {
			status_merge(&l[j], &el, &st[j]);
			add_schedule(el, &st[j]);
			check_cron(&l[j], &st[j]);
		}
	}
	if (rc == -1)
		for (j = 0; j < n; j++)
			lock_status_free(&st[j]);
	quorum_cluster_free(rep, nm);
	return rc;
}

int
lock_inspect_many(struct quorum *q, const char *prefix, char *const *names,
    size_t n, struct lock_status *st, struct err *e)
{
	struct lock	*l;
	size_t		 j, k, m;
	int		 crossslot = 0, rc = 0;

	l = xcalloc(n > 0 ? n : 1, sizeof *l);
	for (j = 0; j < n; j++)
		lock_init(&l[j], q, prefix, names[j], NULL);
	/*
	 * INSPECT_BATCH locks a round trip.  A Cluster refuses keys of
	 * several slots in one call: there, one lock a call.
	 */
	for (j = 0; j < n && rc == 0; j += m) {
		m = n - j < INSPECT_BATCH ? n - j : INSPECT_BATCH;
		if (crossslot)
			m = 1;
		if (inspect_batch(&l[j], m, &st[j], &crossslot, e) == 0)
			continue;
		if (!crossslot || m == 1) {
			rc = -1;
			break;
		}
		/* A Cluster: a call per master, else one lock a call. */
		if (inspect_cluster(&l[j], n - j, &st[j], e) == 0) {
			m = n - j;
			continue;
		}
		m = 0;	/* the same locks again, one at a time */
	}
	if (rc == -1)
		for (k = 0; k < j; k++)
			lock_status_free(&st[k]);
	for (j = 0; j < n; j++)
		lock_free(&l[j]);
	free(l);
	return rc;
}

int
lock_inspect(struct lock *l, struct lock_status *st, struct err *e)
{
	int	crossslot = 0;

	return inspect_batch(l, 1, st, &crossslot, e);
}

int
lock_force_release(struct lock *l, struct lock_status *st, struct err *e)
{
	if (force_script(l, st, e) == -1)
		return -1;
	return st->held;
}

/* Forget who holds it: the lock is free. */
static void
lock_status_clear_holder(struct lock_status *st)
{
	free(st->host);
	free(st->user);
	free(st->command);
	free(st->replace_host);
	st->host = st->user = st->command = st->replace_host = NULL;
	st->replace_pid = 0;
	st->held = 0;
	st->pid = st->acquired_ms = st->ttl_ms = st->fence = 0;
}

void
lock_status_free(struct lock_status *st)
{
	int	i;

	lock_status_clear_holder(st);
	free(st->name);
	free(st->damage);
	for (i = 0; i < st->nslots; i++)
		free_slot(&st->slots[i]);
	free(st->slots);
	for (i = 0; i < st->nwaiters; i++) {
		free(st->waiters[i].token);
		free(st->waiters[i].host);
		free(st->waiters[i].user);
		free(st->waiters[i].command);
	}
	free(st->waiters);
	for (i = 0; i < st->nservers; i++)
		free(st->nodes[i].error);
	free(st->nodes);
	free(st->last_host);
	free(st->last_outcome);
	free(st->paused_by);
	free(st->cron);
	free(st->cron_tz);
	memset(st, 0, sizeof *st);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* SCAN's MATCH is a glob: the prefix and suffix are taken literally. */
static char *
scan_pattern(const char *prefix, const char *suffix)
{
	struct buf	b;

	buf_init(&b);
	for (; *prefix != '\0'; prefix++) {
		if (strchr("*?[]\\", *prefix) != NULL)
			buf_add(&b, "\\", 1);
		buf_add(&b, prefix, 1);
	}
	buf_adds(&b, "{*}");
	buf_adds(&b, suffix);
	return b.p;
}

/*
 * Names that look like locks: PREFIX{NAME}SUFFIX with no brace in NAME,
 * each once, however often SCAN returns it (a key may come twice, and
 * servers share names): a hash set of indices into v, kept as it scans.
 * A listing holds LIST_MAX_NAMES names at most.
 */
#define LIST_MAX_NAMES	1000000

struct names {
	char	**v;
	size_t	  n, cap;
	size_t	 *set, setcap;	/* index + 1 into v; 0 empty */
	size_t	  plen, slen;
	int	  full;		/* a name past LIST_MAX_NAMES came */
};

/*
 * A key under a name rlock refuses (a newline, an escape, bytes that are
 * not UTF-8, an invisible character...) was not written by rlock: it is
 * said in one line, escaped, once a run (watch scans again and again),
 * and left out, like a damaged lock.
 */
static void
refuse_key(const char *key, size_t len, const char *why)
{
	static char	**said;
	static size_t	  nsaid;
	struct buf	  b;
	size_t		  i;

	buf_init(&b);
	buf_adds(&b, "the key ");
	escape_add(&b, key, len);
	buf_printf(&b, " is not rlock's: its name breaks the rules for lock "
	    "names (%s); left out", why);
	for (i = 0; i < nsaid; i++)
		if (strcmp(said[i], b.p) == 0) {
			buf_free(&b);
			return;
		}
	said = xrealloc(said, (nsaid + 1) * sizeof *said);
	said[nsaid++] = xstrdup(b.p);
	lock_damage_report(b.p);
	buf_free(&b);
}

/* FNV-1a. */
static size_t
name_hash(const char *p, size_t len)
{
	uint64_t	h = 14695981039346656037ULL;

	while (len-- > 0)
		h = (h ^ (unsigned char)*p++) * 1099511628211ULL;
	return (size_t)h;
}

/* Where name p (len bytes) is in the set, or the empty slot for it. */
static size_t *
name_slot(struct names *nm, const char *p, size_t len)
{
	size_t	i = name_hash(p, len) & (nm->setcap - 1), *s;

	for (;; i = (i + 1) & (nm->setcap - 1)) {
		s = &nm->set[i];
		if (*s == 0 || (strlen(nm->v[*s - 1]) == len &&
		    memcmp(nm->v[*s - 1], p, len) == 0))
			return s;
	}
}

/* The set twice as large, at half full. */
static void
names_grow(struct names *nm)
{
	size_t	i, *old = nm->set, oldcap = nm->setcap;

	nm->setcap = oldcap ? 2 * oldcap : 64;
	nm->set = xcalloc(nm->setcap, sizeof *nm->set);
	for (i = 0; i < oldcap; i++)
		if (old[i] != 0)
			*name_slot(nm, nm->v[old[i] - 1],
			    strlen(nm->v[old[i] - 1])) = old[i];
	free(old);
}

static void
add_name(void *arg, const char *key, size_t len)
{
	struct names	*nm = arg;
	const char	*nul, *name;
	char		*copy, why[256];
	size_t		 klen = len, *slot;

	if (len < nm->plen + nm->slen + 3)
		return;
	len -= nm->slen;
	if (key[len - 1] != '}' ||
	    memchr(key + nm->plen + 1, '}', len - nm->plen - 2) != NULL)
		return;
	name = key + nm->plen + 1;
	len -= nm->plen + 2;
	copy = xstrndup(name, len);
	/* (A NUL would cut the name short: another lock's name.) */
	if ((nul = memchr(name, '\0', len)) != NULL)
		snprintf(why, sizeof why, "byte %zu is a control character "
		    "(0x00)", (size_t)(nul - name) + 1);
	if (nul != NULL || name_check(copy, why, sizeof why) == -1) {
		refuse_key(key, klen, why);
		free(copy);
		return;
	}
	free(copy);
	if (2 * (nm->n + 1) > nm->setcap)
		names_grow(nm);
	if (*(slot = name_slot(nm, name, len)) != 0)
		return;
	if (nm->n == LIST_MAX_NAMES) {
		nm->full = 1;
		return;
	}
	if (nm->n == nm->cap)
		nm->v = xrealloc(nm->v, (nm->cap = nm->cap ? 2 * nm->cap : 16) *
		    sizeof *nm->v);
	nm->v[nm->n++] = xstrndup(name, len);
	*slot = nm->n;
}

/*
 * Every server is asked (a lock may live on any majority of a quorum),
 * and the names are merged.
 */
int
lock_list(struct quorum *q, const char *prefix, const char *suffix,
    char ***names, size_t *count, struct err *e)
{
	struct names	 nm;
	char		*pattern;
	size_t		 i;
	int		 j, reached;

	memset(&nm, 0, sizeof nm);
	nm.plen = strlen(prefix);
	nm.slen = strlen(suffix);
	pattern = scan_pattern(prefix, suffix);
	reached = quorum_scan(q, pattern, add_name, &nm);
	free(pattern);
	free(nm.set);
	if (reached < quorum_majority(q) || nm.full) {
		for (j = 0; j < q->n && q->errs[j].kind == ERR_NONE; j++)
			;
		*e = q->errs[j < q->n ? j : 0];
		if (nm.full)
			err_set(e, ERR_PROTOCOL, "%s: more than %d locks to "
			    "list; rlock lists that many at most",
			    q->urls[0].display, LIST_MAX_NAMES);
		for (i = 0; i < nm.n; i++)
			free(nm.v[i]);
		free(nm.v);
		return -1;
	}
	if (nm.n > 1)
		qsort(nm.v, nm.n, sizeof *nm.v, cmp_names);
	*names = nm.v;
	*count = nm.n;
	return 0;
}
