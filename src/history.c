/* history.c: a lock's history, read back and shown (rlock log). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "duration.h"
#include "escape.h"
#include "history.h"
#include "lock.h"
#include "scripts.h"
#include "url.h"

/* The scripts' field names, in enum hist_field's order. */
static const char *const field_names[HF__COUNT] = {
	"e", "h", "p", "u", "c", "f", "w", "d", "x", "y", "bh", "bp", "bu",
	"n", "r", "k",
};

/* Two servers' copies of one event are this close by their clocks. */
#define SAME_EVENT_MS	2000

/*
 * An entry's time (its id's first part, ms since the epoch) is bounded
 * before any arithmetic, as lock.c bounds times (LOCK_REPLY_MAX_TIME):
 * anyone who can write to Redis chooses the ids.
 */
#define HISTORY_MAX_TIME	(1LL << 50)	/* the year 37648 */

static int
same_str(const char *a, const char *b)
{
	return strcmp(a == NULL ? "" : a, b == NULL ? "" : b) == 0;
}

/* The ms from since (an acquire's time, as text) to ms; NULL if none. */
static char *
held_since(long long ms, const char *since)
{
	char		*end, *out;
	long long	 t;

	errno = 0;
	t = strtoll(since, &end, 10);
	if (*since == '\0' || *end != '\0' || errno != 0 || t < 0 ||
	    t > HISTORY_MAX_TIME)
		return NULL;
	xasprintf(&out, "%lld", ms > t ? ms - t : 0);
	return out;
}

/* Fill ev from one XREVRANGE entry {id, {field, value, ...}}: 0 or -1. */
int
history_parse(const struct redis_reply *r, struct hist_event *ev)
{
	const struct redis_reply	*fv;
	char				*end;
	size_t				 i;
	int				 k;

	memset(ev, 0, sizeof *ev);
	if (r->type != REDIS_T_ARRAY || r->elements < 2 ||
	    r->element[0]->type != REDIS_T_STRING ||
	    (fv = r->element[1])->type != REDIS_T_ARRAY)
		return -1;
	ev->time_ms = strtoll(r->element[0]->str, &end, 10);
	ev->time_ms = ev->time_ms < 0 ? 0 : ev->time_ms > HISTORY_MAX_TIME ?
	    HISTORY_MAX_TIME : ev->time_ms;
	/* The sequence within the millisecond: only ever compared. */
	ev->seq = *end == '-' ? strtoll(end + 1, NULL, 10) : 0;
	for (i = 0; i + 1 < fv->elements; i += 2) {
		if (fv->element[i]->type != REDIS_T_STRING ||
		    fv->element[i + 1]->type != REDIS_T_STRING)
			continue;
		for (k = 0; k < HF__COUNT; k++)
			if (strcmp(fv->element[i]->str, field_names[k]) == 0 &&
			    ev->v[k] == NULL)
				/* Written by anyone: a URL's password masked. */
				ev->v[k] = k == HF_COMMAND ?
				    url_mask_dup(fv->element[i + 1]->str) :
				    xstrndup(fv->element[i + 1]->str,
				    fv->element[i + 1]->len);
	}
	/*
	 * How long it was held: written as the acquire's time (t), from
	 * which the event's own time gives it (the release asks no clock).
	 */
	for (i = 0; ev->v[HF_HELD] == NULL && i + 1 < fv->elements; i += 2)
		if (fv->element[i]->type == REDIS_T_STRING &&
		    fv->element[i + 1]->type == REDIS_T_STRING &&
		    strcmp(fv->element[i]->str, "t") == 0)
			ev->v[HF_HELD] = held_since(ev->time_ms,
			    fv->element[i + 1]->str);
	return ev->v[HF_EVENT] != NULL ? 0 : -1;
}

int
history_queue_event(const struct hist_event *ev)
{
	return ev->v[HF_EVENT] != NULL &&
	    (strcmp(ev->v[HF_EVENT], "superseded") == 0 ||
	    strcmp(ev->v[HF_EVENT], "replaced") == 0);
}

/* A plain hold's event: its kind (k) empty or not recorded. */
static int
plain_hold(const struct hist_event *ev)
{
	return (strcmp(ev->v[HF_EVENT], "acquired") == 0 ||
	    strcmp(ev->v[HF_EVENT], "leftovers") == 0) &&
	    (ev->v[HF_KIND] == NULL || *ev->v[HF_KIND] == '\0');
}

/*
 * A lock taken afresh while its newest event was a plain hold's acquired
 * (or the leftovers it said before its release) was not released by that
 * hold: it expired.  The scripts record only what happened, so the event
 * is shown here, with the fields the acquire script once wrote for it
 * (the hold's host, pid, user, command, fence and run).  A hand-over's
 * acquired follows the release it comes from; a reader's or a
 * semaphore's hold has a kind, and their events interleave.
 */
int
history_expired(const struct hist_event *prev, const struct hist_event *next,
    struct hist_event *out)
{
	static const enum hist_field	 kept[] = {
		HF_HOST, HF_PID, HF_USER, HF_COMMAND, HF_FENCE, HF_RUN,
	};
	size_t				 i;

	if (strcmp(next->v[HF_EVENT], "acquired") != 0 || !plain_hold(prev))
		return 0;
	memset(out, 0, sizeof *out);
	out->name = next->name != NULL ? xstrdup(next->name) : NULL;
	out->time_ms = next->time_ms;
	out->seq = next->seq;
	out->implied = 1;
	out->servers = next->servers;
	out->nservers = next->nservers;
	out->v[HF_EVENT] = xstrdup("expired");
	for (i = 0; i < sizeof kept / sizeof kept[0]; i++)
		out->v[kept[i]] = xstrdup(prev->v[kept[i]] != NULL ?
		    prev->v[kept[i]] : "");
	return 1;
}

int
history_entries_shape(const struct redis_reply *list)
{
	const struct redis_reply	*en, *fv;
	size_t				 i, k;

	if (list->type != REDIS_T_ARRAY)
		return 0;
	for (i = 0; i < list->elements; i++) {
		en = list->element[i];
		if (en->type != REDIS_T_ARRAY || en->elements != 2 ||
		    en->element[0]->type != REDIS_T_STRING ||
		    (fv = en->element[1])->type != REDIS_T_ARRAY ||
		    fv->elements % 2 != 0)
			return 0;
		for (k = 0; k < fv->elements; k++)
			if (fv->element[k]->type != REDIS_T_STRING)
				return 0;
	}
	return 1;
}

int
history_log_shape(const struct redis_reply *r, void *arg)
{
	const struct redis_reply	*l, *one;
	size_t				 n = *(const size_t *)arg, j;

	if (r->type != REDIS_T_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_T_INTEGER ||
	    (l = r->element[1])->type != REDIS_T_ARRAY || l->elements != n)
		return 0;
	for (j = 0; j < n; j++) {
		one = l->element[j];
		/* A damaged history's error; false: another node's key. */
		if (one->type != REDIS_T_ERROR && one->type != REDIS_T_NIL &&
		    !history_entries_shape(one))
			return 0;
	}
	return 1;
}

void
history_event_free(struct hist_event *ev)
{
	int	k;

	free(ev->name);
	for (k = 0; k < HF__COUNT; k++)
		free(ev->v[k]);
}

/* One of the first `from` events of v that is ev, recorded elsewhere. */
static struct hist_event *
find_copy(struct hist_event *v, size_t from, size_t n,
    const struct hist_event *ev)
{
	size_t	i;

	for (i = from; i < n; i++)
		if (same_str(v[i].v[HF_EVENT], ev->v[HF_EVENT]) &&
		    same_str(v[i].v[HF_RUN], ev->v[HF_RUN]) &&
		    llabs(v[i].time_ms - ev->time_ms) <= SAME_EVENT_MS)
			return &v[i];
	return NULL;
}

/* By time, then by the entry's sequence; an implied event before its cause. */
static int
newest_first(const void *a, const void *b)
{
	const struct hist_event	*x = a, *y = b;

	if (x->time_ms != y->time_ms)
		return x->time_ms < y->time_ms ? 1 : -1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? 1 : -1;
	return x->implied - y->implied;
}

void
history_sort(struct hist_event *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof *v, newest_first);
}

/* Locks a log call reads at most (a round trip). */
#define HISTORY_BATCH	1000

/* Report a damaged history (its error reply). */
static void
copy_words(const char *reply)
{
	char	*words = lock_damage_words(reply);

	lock_damage_report(words);
	free(words);
}

/*
 * Add ev (taken over) to lock name's events from first on, or count a
 * copy of it: where it is in *evp.
 */
static size_t
add_event(struct quorum *q, const char *name, struct hist_event *ev,
    size_t first, struct hist_event **evp, size_t *np)
{
	struct hist_event	*copy;

	if ((copy = find_copy(*evp, first, *np, ev)) != NULL) {
		copy->servers++;
		history_event_free(ev);
		return (size_t)(copy - *evp);
	}
	free(ev->name);
	ev->name = xstrdup(name);
	ev->servers = 1;
	ev->nservers = q->n;
	*evp = xrealloc(*evp, (*np + 1) * sizeof **evp);
	(*evp)[*np] = *ev;
	return (*np)++;
}

/*
 * Append lock name's events from each server's entries (lists[s], newest
 * first, NULL where a server failed), each once, the newest count of them,
 * none older than cut[s] (a server's clock; 0: no bound).  Each server's
 * entries are read on their own first: an expired hold that they imply
 * (history_expired) is shown once for all the servers that imply it, as a
 * recorded event is; the entries older than cut or than the count, read
 * for that, are not shown.
 */
static void
merge_lock(struct quorum *q, const char *name, struct redis_reply **lists,
    const int64_t *cut, int count, struct hist_event **evp, size_t *np)
{
	struct hist_event	*one, implied;
	size_t			 i, j, first = *np, kept, at;
	int			 s, *ok, imply;

	/* A history that is not a stream: said, and left out. */
	for (s = 0; s < q->n; s++)
		if (lists[s] != NULL && lists[s]->type == REDIS_T_ERROR) {
			copy_words(lists[s]->str);
			return;
		}
	for (s = 0; s < q->n; s++) {
		if (lists[s] == NULL || lists[s]->type != REDIS_T_ARRAY ||
		    lists[s]->elements == 0)
			continue;
		one = xcalloc(lists[s]->elements, sizeof *one);
		ok = xcalloc(lists[s]->elements, sizeof *ok);
		for (i = 0; i < lists[s]->elements; i++)
			ok[i] = history_parse(lists[s]->element[i],
			    &one[i]) == 0;
		for (i = 0; i < lists[s]->elements; i++) {
			if (!ok[i] || one[i].time_ms < cut[s]) {
				history_event_free(&one[i]);
				continue;
			}
			/* Entry j, past the queue's events, is the one
			 * before it. */
			for (j = i + 1; j < lists[s]->elements && ok[j] &&
			    history_queue_event(&one[j]); j++)
				;
			imply = j < lists[s]->elements && ok[j] &&
			    history_expired(&one[j], &one[i], &implied);
			at = add_event(q, name, &one[i], first, evp, np);
			if (!imply)
				continue;
			/* Sorted just before its cause, as merged. */
			implied.time_ms = (*evp)[at].time_ms;
			implied.seq = (*evp)[at].seq;
			add_event(q, name, &implied, first, evp, np);
		}
		free(one);
		free(ok);
	}
	/* Merged from several servers: the newest count of them. */
	history_sort(*evp + first, *np - first);
	kept = *np - first < (size_t)count ? *np - first : (size_t)count;
	for (i = first + kept; i < *np; i++)
		history_event_free(&(*evp)[i]);
	*np = first + kept;
}

/*
 * The oldest time a log call's reply (the log script's {now, lists}) may
 * show: now - since_ms (its own entry before them only tells an expiry),
 * or 0.
 */
static int64_t
cut_of(const struct redis_reply *r, int64_t since_ms)
{
	if (since_ms <= 0 || r == NULL || r->type != REDIS_T_ARRAY ||
	    r->elements < 1 || r->element[0]->type != REDIS_T_INTEGER)
		return 0;
	return r->element[0]->integer - since_ms;
}

/*
 * One log call for n locks on every server.  0, or -1 (e filled, nothing
 * appended); *cross when a Cluster refused keys of several slots.
 */
static int
read_batch(struct quorum *q, const char *prefix, char *const *names,
    size_t n, const char **args, int count, int64_t since_ms,
    struct hist_event **evp, size_t *np, int *cross, struct err *e)
{
	struct redis_reply	**rep, **lists;
	char			**keys;
	size_t			  j;
	int64_t			 *cut;
	int			  s, ok;

	keys = xcalloc(n, sizeof *keys);
	for (j = 0; j < n; j++)
		xasprintf(&keys[j], "%s{%s}:log", prefix, names[j]);
	rep = xcalloc(q->n, sizeof *rep);
	lists = xcalloc(q->n, sizeof *lists);
	cut = xcalloc(q->n, sizeof *cut);
	ok = quorum_run(q, &(struct quorum_req){ .script = &script_log,
	    .nkeys = (int)n, .keys = (const char **)keys, .nargs = 2,
	    .args = args }, rep, e);
	/* Not "no history": a server that answers so is no Redis. */
	ok = quorum_check(q, rep, history_log_shape, &n, "the log script", ok,
	    e);
	/* A server's last error stays after a success: only failures count. */
	for (s = 0; s < q->n; s++)
		if (rep[s] == NULL && strstr(q->errs[s].msg, "CROSSSLOT") != NULL)
			*cross = 1;
	for (s = 0; s < q->n; s++)
		cut[s] = cut_of(rep[s], since_ms);
	if (ok >= quorum_majority(q) && !*cross)
		for (j = 0; j < n; j++) {
			for (s = 0; s < q->n; s++)
				lists[s] = rep[s] != NULL &&
				    rep[s]->type == REDIS_T_ARRAY &&
				    rep[s]->elements >= 2 &&
				    rep[s]->element[1]->type == REDIS_T_ARRAY &&
				    j < rep[s]->element[1]->elements ?
				    rep[s]->element[1]->element[j] : NULL;
			merge_lock(q, names[j], lists, cut, count, evp, np);
		}
	quorum_free_replies(q, rep);
	free(rep);
	free(lists);
	free(cut);
	for (j = 0; j < n; j++)
		free(keys[j]);
	free(keys);
	return ok >= quorum_majority(q) && !*cross ? 0 : -1;
}

/* A master's answer for a history it serves: entries, or its damage. */
static int
served(const struct redis_reply *r)
{
	return r->type == REDIS_T_ARRAY || r->type == REDIS_T_ERROR;
}

/*
 * Redis Cluster: every master at once, each reading the histories it
 * serves (see quorum_cluster_run).  0, or -1 with nothing appended
 * (then one lock a call).
 */
static int
read_cluster(struct quorum *q, const char *prefix, char *const *names,
    size_t n, const char **args, int count, int64_t since_ms,
    struct hist_event **evp, size_t *np, struct err *e)
{
	struct redis_reply	**rep, *list;
	char			**keys;
	size_t			  j;
	int64_t			  cut;
	int			  nm, k, rc = 0;

	keys = xcalloc(n, sizeof *keys);
	for (j = 0; j < n; j++)
		xasprintf(&keys[j], "%s{%s}:log", prefix, names[j]);
	nm = quorum_cluster_run(q, &(struct quorum_req){ .script = &script_log,
	    .nkeys = (int)n, .keys = (const char **)keys, .nargs = 2,
	    .args = args }, &rep, e);
	for (j = 0; j < n; j++)
		free(keys[j]);
	free(keys);
	if (nm == -1)
		return -1;
	for (k = 0; k < nm; k++)
		if (!history_log_shape(rep[k], &n))
			rc = -1;
	for (j = 0; rc == 0 && j < n; j++) {
		/* The master that serves it answered a list; the others false. */
		for (list = NULL, k = 0; k < nm && list == NULL; k++)
			if (served(rep[k]->element[1]->element[j]))
				list = rep[k]->element[1]->element[j];
		if (list == NULL)
			rc = -1;
	}
	for (j = 0; rc == 0 && j < n; j++) {
		cut = 0;
		for (list = NULL, k = 0; k < nm && list == NULL; k++)
			if (served(rep[k]->element[1]->element[j])) {
				list = rep[k]->element[1]->element[j];
				cut = cut_of(rep[k], since_ms);
			}
		merge_lock(q, names[j], &list, &cut, count, evp, np);
	}
	quorum_cluster_free(rep, nm);
	return rc;
}

int
history_read(struct quorum *q, const char *prefix, char *const *names,
    size_t n, int count, int64_t since_ms, struct hist_event **evp,
    size_t *np, struct err *e)
{
	const char	*args[2];
	char		 cs[16], ss[24];
	size_t		 j, m;
	int		 cross = 0, one = 0;

	/* One more than shown: the event the oldest one follows (merge_lock). */
	snprintf(cs, sizeof cs, "%d", count + 1);
	snprintf(ss, sizeof ss, "%lld", (long long)since_ms);
	args[0] = cs;
	args[1] = ss;
	/* HISTORY_BATCH locks a call; in Redis Cluster, one. */
	for (j = 0; j < n; j += m) {
		m = one ? 1 : n - j < HISTORY_BATCH ? n - j : HISTORY_BATCH;
		cross = 0;
		if (read_batch(q, prefix, names + j, m, args, count, since_ms,
		    evp, np, &cross, e) == 0)
			continue;
		if (!cross || m == 1)
			return -1;
		/* A Cluster: every master at once, else one lock a call. */
		if (read_cluster(q, prefix, names + j, n - j, args, count,
		    since_ms, evp, np, e) == 0) {
			m = n - j;
			continue;
		}
		one = 1;
		m = 0;	/* the same locks again, one at a time */
	}
	return 0;
}

void
history_free(struct hist_event *v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		history_event_free(&v[i]);
	free(v);
}

/* ----------------------------------------------------------- showing */

static int
has(const struct hist_event *ev, enum hist_field f)
{
	return ev->v[f] != NULL && ev->v[f][0] != '\0';
}

static void
ms_text(struct buf *b, const char *what, const char *ms)
{
	char	d[32];

	buf_printf(b, "%s%s", what, duration_format(strtoll(ms, NULL, 10), d,
	    sizeof d));
}

/* "alice@web1 pid 4711 (./deploy.sh)" */
static void
who_text(struct buf *b, const char *user, const char *host, const char *pid,
    const char *command)
{
	buf_printf(b, "%s@%s pid %s", user != NULL && *user ? user : "?",
	    host != NULL && *host ? host : "?", pid != NULL && *pid ? pid : "?");
	if (command != NULL && *command != '\0')
		buf_printf(b, " (%s)", command);
}

/* exec's outcome as words: "exit 0", "killed by SIGTERM"... */
static void
outcome_text(struct buf *b, const char *x)
{
	if (strncmp(x, "exit:", 5) == 0)
		buf_printf(b, "exit %s", x + 5);
	else if (strncmp(x, "signal:", 7) == 0)
		buf_printf(b, "killed by SIG%s", x + 7);
	else if (strcmp(x, "max-runtime") == 0)
		buf_adds(b, "stopped at --max-runtime");
	else if (strcmp(x, "replaced") == 0)
		buf_adds(b, "stopped at a newcomer's --replace");
	else if (strcmp(x, "release") == 0)
		buf_adds(b, "by rlock release");
	else if (*x == '\0')
		buf_adds(b, "given back");
	else
		buf_adds(b, x);
}

/*
 * Every field of an entry is whatever the stream holds (a script wrote it,
 * or anyone who can write to Redis): the line is made in a buffer of its
 * own and shown escaped, so that no field can steer a terminal or forge a
 * line of its own.
 */
void
history_text(struct buf *out, const struct hist_event *ev)
{
	const char	*e = ev->v[HF_EVENT], *const *v = (const char *const *)ev->v;
	char		 when[64];
	time_t		 t = (time_t)(ev->time_ms / 1000);
	struct tm	 tm;
	struct buf	 line, *b = &line;

	buf_init(&line);
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
	buf_printf(b, "%s.%03lld %s %s", when, ev->time_ms % 1000, ev->name, e);
	if (strcmp(e, "forced") == 0) {
		buf_adds(b, " by ");
		who_text(b, v[HF_BY_USER], v[HF_BY_HOST], v[HF_BY_PID], NULL);
		if (has(ev, HF_REMOVED) && strcmp(v[HF_REMOVED], "1") != 0)
			buf_printf(b, ": removed %s holders, first ",
			    v[HF_REMOVED]);
		else
			buf_adds(b, ": removed ");
	} else if (strcmp(e, "expired") == 0 || history_queue_event(ev))
		buf_adds(b, ": ");
	else
		buf_adds(b, " by ");
	who_text(b, v[HF_USER], v[HF_HOST], v[HF_PID], v[HF_COMMAND]);
	if (history_queue_event(ev)) {
		/* Who superseded the waiter, or asked the holder to stop. */
		buf_adds(b, ", by ");
		who_text(b, v[HF_BY_USER], v[HF_BY_HOST], v[HF_BY_PID], NULL);
	}
	if (has(ev, HF_KIND) && strncmp(v[HF_KIND], "limit:", 6) == 0)
		buf_printf(b, " (--limit %s)", v[HF_KIND] + 6);
	else if (has(ev, HF_KIND))
		buf_printf(b, " (%s)", v[HF_KIND]);
	if (has(ev, HF_HELD))
		ms_text(b, " after ", v[HF_HELD]);
	if (strcmp(e, "released") == 0 && ev->v[HF_OUTCOME] != NULL) {
		buf_adds(b, ": ");
		outcome_text(b, v[HF_OUTCOME]);
		if (has(ev, HF_WHY))
			buf_printf(b, " (%s)", v[HF_WHY]);
	}
	if (strcmp(e, "leftovers") == 0 && has(ev, HF_WHY))
		buf_printf(b, ": %s", v[HF_WHY]);
	if (strcmp(e, "lost") == 0) {
		if (has(ev, HF_WHY))
			buf_printf(b, ": %s", v[HF_WHY]);
		if (has(ev, HF_OUTCOME) && strcmp(v[HF_OUTCOME], "release") == 0)
			buf_adds(b, " (found by rlock release)");
		else if (has(ev, HF_OUTCOME)) {
			buf_adds(b, "; the command: ");
			outcome_text(b, v[HF_OUTCOME]);
		}
	}
	if (strcmp(e, "expired") == 0)
		buf_adds(b, " was never released");
	if (has(ev, HF_FENCE))
		buf_printf(b, ", fence %s", v[HF_FENCE]);
	if (has(ev, HF_WAITED) && strtoll(v[HF_WAITED], NULL, 10) > 0)
		ms_text(b, ", waited ", v[HF_WAITED]);
	if (ev->nservers > 1)
		buf_printf(b, " [on %d of %d servers]", ev->servers,
		    ev->nservers);
	escape_add(out, line.p, line.len);
	buf_adds(out, "\n");
	buf_free(&line);
}

static void
json_num_field(struct json *j, const char *key, const char *v)
{
	if (v == NULL || *v == '\0')
		return;
	json_key(j, key);
	json_int(j, strtoll(v, NULL, 10));
}

static void
json_str_field(struct json *j, const char *key, const char *v)
{
	if (v == NULL)
		return;
	json_key(j, key);
	json_str(j, v);
}

/*
 * How a released or lost hold ended, as a field of its own (the stream
 * keeps it as one string, "x": see HF_OUTCOME): "exit_status" a number
 * when exec's command exited, "signal" its name ("SIGTERM", as rlock
 * names signals everywhere; an unnamed one "SIG" and its number) when one
 * killed it, else a "reason": max-runtime, release, given-back (no
 * outcome: rlock gave it back itself), lost (a loss with no command's end
 * to tell) or the text of release --reason.  Exactly one of the three on
 * those events, none on the others.
 */
static void
outcome_json(struct json *j, const struct hist_event *ev)
{
	const char	*e = ev->v[HF_EVENT], *x = ev->v[HF_OUTCOME];
	const char	*p;
	char		*end, name[32];
	long		 n;
	int		 lost;

	lost = strcmp(e, "lost") == 0;
	if (!lost && strcmp(e, "released") != 0)
		return;
	if (x == NULL || *x == '\0') {
		json_key(j, "reason");
		json_str(j, lost ? "lost" : "given-back");
		return;
	}
	if (strncmp(x, "exit:", 5) == 0 && x[5] >= '0' && x[5] <= '9') {
		errno = 0;
		n = strtol(x + 5, &end, 10);
		if (errno == 0 && *end == '\0' && n <= 255) {
			json_key(j, "exit_status");
			json_int(j, n);
			return;
		}
	}
	if (strncmp(x, "signal:", 7) == 0 && x[7] != '\0') {
		for (p = x + 7; (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9'); p++)
			;
		if (*p == '\0' && (size_t)(p - (x + 7)) < sizeof name - 3) {
			snprintf(name, sizeof name, "SIG%s", x + 7);
			json_key(j, "signal");
			json_str(j, name);
			return;
		}
	}
	json_key(j, "reason");
	json_str(j, x);
}

void
history_json(struct json *j, const struct hist_event *ev)
{
	char *const	*v = ev->v;

	json_object_begin(j);
	json_key(j, "name");
	json_str(j, ev->name);
	json_key(j, "time_ms");
	json_int(j, ev->time_ms);
	json_str_field(j, "event", v[HF_EVENT]);
	json_str_field(j, "host", v[HF_HOST]);
	json_num_field(j, "pid", v[HF_PID]);
	json_str_field(j, "user", v[HF_USER]);
	json_str_field(j, "command", v[HF_COMMAND]);
	json_num_field(j, "fence", v[HF_FENCE]);
	json_num_field(j, "waited_ms", v[HF_WAITED]);
	json_num_field(j, "held_ms", v[HF_HELD]);
	outcome_json(j, ev);
	json_str_field(j, "why", v[HF_WHY]);
	if (v[HF_BY_HOST] != NULL) {
		json_key(j, "by");
		json_object_begin(j);
		json_str_field(j, "host", v[HF_BY_HOST]);
		json_num_field(j, "pid", v[HF_BY_PID]);
		json_str_field(j, "user", v[HF_BY_USER]);
		json_object_end(j);
	}
	json_num_field(j, "removed", v[HF_REMOVED]);
	if (has(ev, HF_KIND))
		json_str_field(j, "kind", v[HF_KIND]);
	if (ev->nservers > 1) {
		json_key(j, "servers");
		json_int(j, ev->servers);
	}
	json_object_end(j);
}
