/* quorum.c: one poll() loop over the servers a lock lives on. */

/*
 * The contract: a request goes out on every server before any reply is
 * read, and one poll() loop then moves every connection forward at once
 * -- connects to each address of a host, TLS handshakes, Sentinel
 * lookups, AUTH, replies -- each until its own deadline, so n servers cost
 * the slowest one (at most --connect-timeout plus --timeout), not the sum,
 * and a silent server holds up no other.  No threads: parallel servers
 * are events.  A single server is a quorum of one, through the same loop.
 *
 * A server that fails is remembered in errs[] and connected again on the
 * next request; whether enough servers answered, and what their answers
 * mean, is for lock.c to judge.  A server that says it cannot take writes
 * now (a demoted master, one still loading) has its connection dropped,
 * so the next request finds the new master (through the sentinels, for a
 * sentinel URL).
 */

#include <ctype.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "quorum.h"
#include "signals.h"
#include "util.h"

/* How long a server that could not be connected to is left alone. */
#define RECONNECT_PAUSE_MS	1000

/*
 * How long the other servers' wakes may follow the first (see
 * quorum_run with a wait_key): the releases went out together, so a few
 * milliseconds, on a busy machine too.
 */
#define WAKE_GRACE_MS		10

/*
 * How long, in a wait of several servers with the script behind each
 * BLPOP, the others may follow once a majority granted with no wake (the
 * BLPOPs timed out): Redis 6.0 ends a blocked client's timeout from its
 * clients' cron, ten times a second, so servers answer up to 100 ms apart.
 */
#define TIMEOUT_GRACE_MS	100

/* Where a server is in a round. */
enum { NOT_ASKED, ASKED, ANSWERED };

/* One round: the request, each server's state, and what settles it. */
struct round {
	const struct redis_req	*rq;
	struct redis_req	 again;	/* the request without its BLPOP */
	int			*state;
	int			*retried; /* asked again after READONLY */
	int			*done;	/* for settled(): answered or failed */
	struct redis_reply	**replies;
	quorum_settled_fn	 settled;
	void			*arg;
	int			 keep_errors;	/* error replies are replies */
};

void
quorum_init(struct quorum *q, const struct url *urls, int n,
    const struct redis_opts *opts)
{
	int	i;

	memset(q, 0, sizeof *q);
	q->n = n;
	q->urls = urls;
	q->opts = opts;
	q->conn = xcalloc(n, sizeof *q->conn);
	q->errs = xcalloc(n, sizeof *q->errs);
	q->cerrs = xcalloc(n, sizeof *q->cerrs);
	q->retry_at = xcalloc(n, sizeof *q->retry_at);
	q->blocked = xcalloc(n, sizeof *q->blocked);
	for (i = 0; i < n; i++)
		q->conn[i] = redis_new(&urls[i], opts);
}

/*
 * Start connecting to every server, without waiting: the connects go on
 * in the first request's loop, side by side.  Fails (-1, e filled with the
 * first failure) only when fewer than a majority could even be started
 * (a name that does not resolve, a socket path that is too long).
 */
int
quorum_open(struct quorum *q, const struct url *urls, int n,
    const struct redis_opts *opts, struct err *e)
{
	int	i, ok = 0, first = -1;

	quorum_init(q, urls, n, opts);
	for (i = 0; i < n; i++) {
		if (redis_prepare(q->conn[i], &q->errs[i]) == 0)
			ok++;
		else if (first == -1)
			first = i;
	}
	if (ok >= quorum_majority(q))
		return 0;
	*e = q->errs[first];
	if (n > 1 && e->kind != ERR_USAGE)
		err_prefix(e, "only %d of %d servers answered, and a lock "
		    "needs %d", ok, n, quorum_majority(q));
	return -1;
}

void
quorum_close(struct quorum *q)
{
	int	i;

	for (i = 0; q->conn != NULL && i < q->n; i++)
		redis_free(q->conn[i]);
	free(q->conn);
	free(q->errs);
	free(q->cerrs);
	free(q->retry_at);
	free(q->blocked);
	memset(q, 0, sizeof *q);
}

void
quorum_retry_now(struct quorum *q)
{
	int	i;

	for (i = 0; i < q->n; i++)
		q->retry_at[i] = 0;
}

int
quorum_reached(const struct quorum *q, int i)
{
	return redis_reached(q->conn[i]);
}

void
quorum_limit(struct quorum *q, int64_t until)
{
	q->limit = until;
}

void
quorum_waiting(struct quorum *q, void (*fn)(void *), void *arg)
{
	q->waiting = fn;
	q->waiting_arg = arg;
}

int
quorum_distinct(struct quorum *q, struct err *e)
{
	const char	*a, *b;
	int		 i, j;

	for (i = 0; i < q->n; i++) {
		if (*(a = redis_run_id(q->conn[i])) == '\0')
			continue;
		for (j = i + 1; j < q->n; j++)
			if (strcmp(a, (b = redis_run_id(q->conn[j]))) == 0) {
				err_set(e, ERR_USAGE, "%s and %s are the same "
				    "server (run_id %.12s...); each server "
				    "counts once in a quorum, so give each "
				    "only once", q->urls[i].display,
				    q->urls[j].display, b);
				return -1;
			}
	}
	return 0;
}

/* ------------------------------------------------------------ the loop */

static int
is_not_writable(const char *err)
{
	return strncmp(err, "READONLY", 8) == 0 ||
	    strncmp(err, "MASTERDOWN", 10) == 0 ||
	    strncmp(err, "LOADING", 7) == 0;
}

/*
 * With several servers, one that could not be connected to is not tried
 * again for a while: a dead one would otherwise cost a connect on every
 * request.  Alone, it is always tried: there is nothing else to do.
 */
static void
finished(struct quorum *q, struct round *rd, int i)
{
	rd->state[i] = ANSWERED;
	rd->done[i] = 1;
	if (rd->replies[i] == NULL && q->n > 1 &&
	    redis_connect_failed(q->conn[i])) {
		q->cerrs[i] = q->errs[i];
		q->retry_at[i] = now_mono_ms() + RECONNECT_PAUSE_MS;
	}
}

/* Server i's request has an outcome (rc from redis_step): record it. */
static void
outcome(struct quorum *q, struct round *rd, int i, int rc)
{
	struct redis_reply	*rr;

	if (rc == 0)
		return;
	if (rc == 1) {
		rr = redis_take(q->conn[i]);
		if (rr->type == REDIS_T_ERROR && rd->keep_errors)
			redis_reply_error(q->conn[i], rr, "", &q->errs[i]);
		if (rr->type != REDIS_T_ERROR || rd->keep_errors) {
			rd->replies[i] = rr;
			finished(q, rd, i);
			return;
		}
		redis_reply_error(q->conn[i], rr, "", &q->errs[i]);
		if (is_not_writable(rr->str))
			redis_abandon(q->conn[i]);
		/* A READONLY server is asked once more, anew. */
		if (strncmp(rr->str, "READONLY", 8) == 0 && !rd->retried[i]) {
			rd->retried[i] = 1;
			redis_reply_free(rr);
			if (redis_start(q->conn[i], &rd->again,
			    &q->errs[i]) == 0) {
				outcome(q, rd, i, redis_step(q->conn[i],
				    &q->errs[i]));
				return;
			}
			finished(q, rd, i);
			return;
		}
		redis_reply_free(rr);
	}
	finished(q, rd, i);
}

/* Send the request to server i, and take it as far as it goes at once. */
static void
ask(struct quorum *q, struct round *rd, int i)
{
	err_clear(&q->errs[i]);
	if (q->n > 1 && now_mono_ms() < q->retry_at[i]) {
		q->errs[i] = q->cerrs[i];
		rd->state[i] = ANSWERED;
		rd->done[i] = 1;
		return;
	}
	rd->state[i] = ASKED;
	if (redis_start(q->conn[i], rd->rq, &q->errs[i]) == -1) {
		finished(q, rd, i);
		return;
	}
	outcome(q, rd, i, redis_step(q->conn[i], &q->errs[i]));
}

/* When the loop must look at server i again, sockets or not. */
static int64_t
due_at(const struct quorum *q, int i)
{
	int64_t	dl = redis_deadline(q->conn[i]), w = redis_wake(q->conn[i]);

	return w >= 0 && w < dl ? w : dl;
}

/*
 * Give up on the servers still asked: their connections are dropped and
 * made again when next needed.
 */
static void
give_up(struct quorum *q, struct round *rd, int64_t now)
{
	int	i;

	for (i = 0; i < q->n; i++) {
		if (rd->state[i] != ASKED)
			continue;
		/* (Not for a signal: that ends the wait, busy or not.) */
		q->blocked[i] = !signal_caught &&
		    redis_wait_unanswered(q->conn[i]);
		redis_abandon(q->conn[i]);
		rd->state[i] = ANSWERED;
		if (signal_caught)
			err_set(&q->errs[i], ERR_INTERRUPTED,
			    "interrupted by a signal");
		else if (q->limit > 0 && now >= q->limit)
			err_set(&q->errs[i], ERR_TIMEOUT, "%s: no reply "
			    "within the time left", redis_display(q->conn[i]));
		else
			err_set(&q->errs[i], ERR_TIMEOUT, "%s: no answer "
			    "needed once the others had decided",
			    redis_display(q->conn[i]));
	}
}

/*
 * Poll every server asked, whichever is ready first, each until its own
 * deadline; stop early (after a short grace) once `settled` says the
 * answers so far decide the outcome (a majority granted, say), so that one
 * frozen server does not hold up what the others have already decided.
 */
static void
await(struct quorum *q, struct round *rd)
{
	struct pollfd	*pfd;
	int64_t		 now, wait, dl, start = now_mono_ms(), grace = -1;
	int		*owner, *ready, i, k, np, left, s;

	pfd = xcalloc((size_t)q->n * REDIS_MAX_FDS, sizeof *pfd);
	owner = xcalloc((size_t)q->n * REDIS_MAX_FDS, sizeof *owner);
	ready = xcalloc(q->n, sizeof *ready);
	for (;;) {
		now = now_mono_ms();
		/*
		 * Once the outcome is decided, the others still get a grace
		 * of twice the time taken so far (at least 10 ms): a lock
		 * held on every server survives the loss of one later, so a
		 * healthy straggler should not be left out; a frozen one
		 * costs only the grace.  (2 from settled: stop at once; 3: a
		 * grace of WAKE_GRACE_MS; 4: of TIMEOUT_GRACE_MS.)
		 */
		if (rd->settled != NULL && grace < 0 &&
		    (s = rd->settled(rd->replies, rd->done, q->n, rd->arg)))
			grace = s == 3 ? now + WAKE_GRACE_MS : s == 4 ? now +
			    TIMEOUT_GRACE_MS : s == 2 ? now : now +
			    (now - start > 5 ? 2 * (now - start) : 10);
		if ((grace >= 0 && now >= grace) || signal_caught ||
		    (q->limit > 0 && now >= q->limit))
			break;
		wait = -1;
		for (i = np = left = 0; i < q->n; i++) {
			if (rd->state[i] != ASKED)
				continue;
			left++;
			k = redis_pollfds(q->conn[i], pfd + np);
			while (k-- > 0)
				owner[np++] = i;
			dl = due_at(q, i);
			if (grace >= 0 && grace < dl)
				dl = grace;
			if (q->limit > 0 && q->limit < dl)
				dl = q->limit;
			dl -= now;
			if (dl < 0)
				dl = 0;
			if (wait < 0 || dl < wait)
				wait = dl;
		}
		if (left == 0)
			break;
		if (poll(pfd, np, wait > INT32_MAX ? INT32_MAX :
		    (int)wait) < 0 && signal_caught)
			break;
		memset(ready, 0, q->n * sizeof *ready);
		for (k = 0; k < np; k++)
			if (pfd[k].revents != 0)
				ready[owner[k]] = 1;
		now = now_mono_ms();
		for (i = 0; i < q->n; i++)
			if (rd->state[i] == ASKED &&
			    (ready[i] || now >= due_at(q, i)))
				outcome(q, rd, i, redis_step(q->conn[i],
				    &q->errs[i]));
	}
	give_up(q, rd, now_mono_ms());
	free(pfd);
	free(owner);
	free(ready);
}

/*
 * One round: rq to every server (or those with only[i] set), replies[i]
 * set where one came (error replies count as failures unless
 * keep_errors: errs[i] says why).  Returns how many replied; when fewer
 * than a majority of those asked, e holds the first failure.
 */
static int
round_trip(struct quorum *q, const int *only, const struct redis_req *rq,
    quorum_settled_fn settled, void *arg, int keep_errors,
    struct redis_reply **replies, struct err *e)
{
	struct round	rd;
	int		i, ok = 0, asked = 0, first = -1;

	memset(&rd, 0, sizeof rd);
	rd.rq = rq;
	rd.again = *rq;
	rd.again.wait_key = rd.again.wait_key2 = NULL;
	rd.state = xcalloc(q->n, sizeof *rd.state);
	rd.retried = xcalloc(q->n, sizeof *rd.retried);
	rd.done = xcalloc(q->n, sizeof *rd.done);
	rd.replies = replies;
	rd.settled = settled;
	rd.arg = arg;
	rd.keep_errors = keep_errors;
	for (i = 0; i < q->n; i++) {
		replies[i] = NULL;
		q->blocked[i] = 0;
		rd.done[i] = only != NULL && !only[i];
		asked += !rd.done[i];
	}
	for (i = 0; i < q->n; i++)
		if (!rd.done[i])
			ask(q, &rd, i);
	if (q->waiting != NULL && rq->wait_key != NULL) {
		void	(*fn)(void *) = q->waiting;

		q->waiting = NULL;
		fn(q->waiting_arg);
	}
	await(q, &rd);
	for (i = 0; i < q->n; i++) {
		if (only != NULL && !only[i])
			continue;
		if (replies[i] != NULL)
			ok++;
		else if (first == -1 || q->errs[i].kind == ERR_INTERRUPTED)
			first = i;
	}
	if (ok < asked / 2 + 1 && first >= 0) {
		*e = q->errs[first];
		if (asked > 1 && e->kind != ERR_INTERRUPTED)
			err_prefix(e, "only %d of %d servers answered, and a "
			    "lock needs %d", ok, asked, asked / 2 + 1);
	}
	free(rd.state);
	free(rd.retried);
	free(rd.done);
	return ok;
}

/* ------------------------------------------------------------ requests */

/* Server i's BLPOP answered the error code (n bytes): kept, printable. */
static void
note_wait_error(struct quorum *q, int i, const char *code, size_t n)
{
	char	*p;

	q->wait_err = i + 1;
	snprintf(q->wait_code, sizeof q->wait_code, "%.*s", (int)n, code);
	for (p = q->wait_code; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
			*p = '?';
}

int
quorum_wait_error(const struct quorum *q, const char **code)
{
	if (q->wait_err == 0)
		return -1;
	if (code != NULL)
		*code = q->wait_code;
	return q->wait_err - 1;
}

/* What settles a wait of several servers: see quorum_run. */
struct wait_settle {
	struct quorum		*q;
	quorum_settled_fn	 settled;
	void			*arg;
};

static int
settled_wait(struct redis_reply **replies, const int *done, int n, void *arg)
{
	struct wait_settle	*w = arg;
	int			 i, woken = 0;

	for (i = 0; i < n; i++)
		woken |= done[i] && redis_wait_popped(w->q->conn[i]);
	if (w->settled != NULL && w->settled(replies, done, n, w->arg))
		return woken ? 3 : 4;
	return woken ? 3 : 0;
}

/*
 * With several servers, each BLPOP returns on its own: a release pops
 * them all within a moment, a timeout ends them about together.  So the
 * round is settled once a server woke us (its BLPOP popped) and the
 * others' wakes have had WAKE_GRACE_MS, or once `settled` says so and the
 * others have had that grace (TIMEOUT_GRACE_MS when no wake came).  A
 * server that has not answered by then is given up: its connection is
 * closed, which takes the script back if the BLPOP still blocks, unless
 * it returned just before, and does not if the script is under way, on a
 * busy machine (q->blocked says which servers: the script may have run;
 * the caller counts them busy, and gives back everywhere, see lock.c
 * try_acquire).
 */
int
quorum_run(struct quorum *q, const struct quorum_req *r,
    struct redis_reply **replies, struct err *e)
{
	struct redis_sent	sent = { NULL, 0 };
	struct redis_req	rq = {
		.script = r->script, .nkeys = r->nkeys, .keys = r->keys,
		.nargs = r->nargs, .args = r->args,
		/* Formatted once, sent to each server as it is. */
		.sent = q->n > 1 ? &sent : NULL,
	};
	struct wait_settle	w = { q, r->settled, r->arg };
	const char		*code;
	int			 i, ok;

	if (r->wait_key == NULL) {
		ok = round_trip(q, r->only, &rq, r->settled, r->arg, 0,
		    replies, e);
		free(sent.cmd);
		return ok;
	}
	rq.wait_key = r->wait_key;
	rq.wait_key2 = r->wait_key2;
	rq.wait_ms = r->wait_ms;
	if (q->n > 1)
		ok = round_trip(q, r->only, &rq, settled_wait, &w, 0, replies,
		    e);
	else
		ok = round_trip(q, r->only, &rq, r->settled, r->arg, 0,
		    replies, e);
	free(sent.cmd);
	q->wait_err = 0;
	for (i = 0; i < q->n && q->wait_err == 0; i++)
		if ((code = redis_wait_error(q->conn[i])) != NULL)
			note_wait_error(q, i, code, strlen(code));
	return ok;
}

int
quorum_command(struct quorum *q, const int *only, int argc, const char **argv,
    int64_t extra_ms, struct redis_reply **replies, struct err *e)
{
	struct redis_req	rq = {
		.argc = argc, .argv = argv, .extra_ms = extra_ms,
	};

	return round_trip(q, only, &rq, NULL, NULL, 0, replies, e);
}

/* One command to server i alone, error replies kept (or not). */
static struct redis_reply *
call(struct quorum *q, int i, int keep_errors, struct err *e, int argc,
    const char **argv)
{
	struct redis_reply	**rep, *rr;
	struct redis_req	  rq = { .argc = argc, .argv = argv };
	int			 *only;

	rep = xcalloc(q->n, sizeof *rep);
	only = xcalloc(q->n, sizeof *only);
	only[i] = 1;
	round_trip(q, only, &rq, NULL, NULL, keep_errors, rep, e);
	if ((rr = rep[i]) == NULL || rr->type == REDIS_T_ERROR)
		*e = q->errs[i];
	free(rep);
	free(only);
	return rr;
}

struct redis_reply *
quorum_ask(struct quorum *q, int i, struct err *e, int argc,
    const char **argv)
{
	return call(q, i, 1, e, argc, argv);
}

struct redis_reply *
quorum_call(struct quorum *q, int i, struct err *e, int argc,
    const char **argv)
{
	return call(q, i, 0, e, argc, argv);
}

struct redis_reply *
quorum_callv(struct quorum *q, int i, struct err *e, ...)
{
	const char	*argv[16];
	int		 argc = 0;
	va_list		 ap;

	va_start(ap, e);
	while (argc < 16 && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	return quorum_call(q, i, e, argc, argv);
}

void
quorum_free_replies(struct quorum *q, struct redis_reply **replies)
{
	int	i;

	for (i = 0; i < q->n; i++) {
		redis_reply_free(replies[i]);
		replies[i] = NULL;
	}
}

const char *
quorum_reply_kind(const struct redis_reply *r)
{
	switch (r->type) {
	case REDIS_T_STRING:
		return "a string";
	case REDIS_T_ARRAY:
		return "an array";
	case REDIS_T_INTEGER:
		return "an integer";
	case REDIS_T_NIL:
		return "a nil";
	case REDIS_T_STATUS:
		return "a status";
	case REDIS_T_ERROR:
		return "an error";
	default:
		return "a reply";
	}
}

/*
 * A reply of the wrong shape is no answer: read as one, a server that is
 * not Redis, or something between, could pass for "busy" or "free".
 */
int
quorum_check(struct quorum *q, struct redis_reply **rep, quorum_shape_fn shape,
    void *arg, const char *what, int ok, struct err *e)
{
	int	i, bad = -1;

	for (i = 0; i < q->n; i++) {
		if (rep[i] == NULL || rep[i]->type == REDIS_T_ERROR ||
		    shape(rep[i], arg))
			continue;
		err_set(&q->errs[i], ERR_PROTOCOL, "%s: %s was answered with "
		    "%s of a shape rlock's script never gives; is it a "
		    "Redis server, with nothing in between?",
		    redis_display(q->conn[i]), what,
		    quorum_reply_kind(rep[i]));
		redis_reply_free(rep[i]);
		rep[i] = NULL;
		ok--;
		if (bad == -1)
			bad = i;
	}
	if (bad >= 0 && ok < quorum_majority(q)) {
		*e = q->errs[bad];
		if (q->n > 1)
			err_prefix(e, "only %d of %d servers answered, and a "
			    "lock needs %d", ok, q->n, quorum_majority(q));
	}
	return ok;
}

/* ------------------------------------------------------------ listing */

/*
 * Keys a SCAN page looks at: a listing costs a round trip a page, and a
 * page of 10,000 keys keeps the server busy a millisecond or two.
 */
#define SCAN_COUNT	"10000"

/*
 * A SCAN ends when its cursor comes back to 0, which a server that keeps
 * answering another cursor never does.  10,000 pages look at 100 million
 * keys, far more than a server that rlock shares holds.
 */
#define SCAN_MAX_PAGES	10000

/*
 * Hand the keys of SCAN reply rr from server i to fn, and its cursor to
 * *cursor (to free).  0, or -1 with e filled when it is no SCAN reply.
 */
static int
scan_page(struct quorum *q, int i, const struct redis_reply *rr,
    quorum_key_fn fn, void *arg, char **cursor, struct err *e)
{
	size_t	k;

	if (rr->type != REDIS_T_ARRAY || rr->elements != 2 ||
	    rr->element[0]->type != REDIS_T_STRING ||
	    rr->element[1]->type != REDIS_T_ARRAY) {
		err_set(e, ERR_PROTOCOL, "%s: unexpected reply to SCAN",
		    q->urls[i].display);
		return -1;
	}
	*cursor = xstrdup(rr->element[0]->str);
	for (k = 0; k < rr->element[1]->elements; k++)
		if (rr->element[1]->element[k]->type == REDIS_T_STRING)
			fn(arg, rr->element[1]->element[k]->str,
			    rr->element[1]->element[k]->len);
	return 0;
}

/*
 * SCAN server i from cursor from on to its end (cursor "0" ends it, but
 * for the first page of a scan: first set).
 */
static int
scan_from(struct quorum *q, int i, const char *from, int first,
    const char *pattern, quorum_key_fn fn, void *arg, struct err *e)
{
	struct redis_reply	*rr;
	char			*cursor = xstrdup(from), *next;
	int			 rc = 0, pages = 1;

	while (rc == 0 && (first || strcmp(cursor, "0") != 0)) {
		first = 0;
		if (++pages > SCAN_MAX_PAGES) {
			err_set(e, ERR_PROTOCOL, "%s: SCAN did not end within "
			    "%d pages (%s keys each); is it a Redis server, "
			    "with nothing in between?", q->urls[i].display,
			    SCAN_MAX_PAGES, SCAN_COUNT);
			rc = -1;
			break;
		}
		rr = quorum_callv(q, i, e, "SCAN", cursor, "MATCH", pattern,
		    "COUNT", SCAN_COUNT, NULL);
		if (rr == NULL || scan_page(q, i, rr, fn, arg, &next, e) == -1)
			rc = -1;
		else {
			free(cursor);
			cursor = next;
		}
		redis_reply_free(rr);
	}
	free(cursor);
	return rc;
}

/* SCAN server i of q for pattern, calling fn for each key. */
static int
scan_one(struct quorum *q, int i, const char *pattern, quorum_key_fn fn,
    void *arg, struct err *e)
{
	return scan_from(q, i, "0", 1, pattern, fn, arg, e);
}

/*
 * A Cluster node holds only its own slots' keys: scan every master that
 * server i's CLUSTER NODES lists (a quorum of one each, for the while).
 */
static int
scan_masters(struct quorum *q, int i, char *nodes, const char *pattern,
    quorum_key_fn fn, void *arg, struct err *e)
{
	struct quorum	 one;
	struct url	 u;
	char		*line, *next, *f[4], *at, *colon;
	int		 k, rc = 0;

	for (line = nodes; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		for (k = 0; k < 4 && line != NULL; k++)
			f[k] = strsep(&line, " ");
		if (k < 4 || f[2] == NULL || strstr(f[2], "master") == NULL ||
		    strstr(f[2], "fail") != NULL)
			continue;
		if ((at = strchr(f[1], '@')) != NULL)
			*at = '\0';
		if ((colon = strrchr(f[1], ':')) == NULL)
			continue;
		*colon = '\0';
		url_retarget(&u, &q->urls[i], *f[1] != '\0' ? f[1] :
		    q->urls[i].host, atoi(colon + 1));
		u.db = -1;
		quorum_init(&one, &u, 1, q->opts);
		if (scan_one(&one, 0, pattern, fn, arg, e) == -1)
			rc = -1;
		quorum_close(&one);
		url_free(&u);
	}
	return rc;
}

int
quorum_key_slot(const char *key)
{
	return redis_key_slot(key);
}

int
quorum_cluster_masters(struct quorum *q, int i, struct quorum_master **mp,
    struct err *e)
{
	struct redis_reply	*rr;
	struct quorum_master	*m = NULL;
	char			*text, *line, *next, *f, *at, *colon, *dash;
	int			 n = 0, k;

	*mp = NULL;
	rr = quorum_callv(q, i, e, "CLUSTER", "NODES", NULL);
	if (rr == NULL)
		return e->kind == ERR_REPLY ? 0 : -1;
	if (rr->type != REDIS_T_STRING) {
		redis_reply_free(rr);
		return 0;
	}
	text = xstrdup(rr->str);
	redis_reply_free(rr);
	/* id addr flags master ping pong epoch link slot... */
	for (line = text; line != NULL && *line != '\0'; line = next) {
		char	*fv[8];

		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		for (k = 0; k < 8 && line != NULL; k++)
			fv[k] = strsep(&line, " ");
		if (k < 8 || strstr(fv[2], "master") == NULL ||
		    strstr(fv[2], "fail") != NULL)
			continue;
		if ((at = strchr(fv[1], '@')) != NULL)
			*at = '\0';
		if ((colon = strrchr(fv[1], ':')) == NULL)
			continue;
		*colon = '\0';
		m = xrealloc(m, (n + 1) * sizeof *m);
		memset(&m[n], 0, sizeof m[n]);
		url_retarget(&m[n].url, &q->urls[i], *fv[1] != '\0' ? fv[1] :
		    q->urls[i].host, atoi(colon + 1));
		m[n].url.db = -1;
		/* "lo-hi" or "slot"; "[slot->-id]" (migrating) is not served. */
		while ((f = strsep(&line, " ")) != NULL) {
			if (*f == '[' || *f == '\0')
				continue;
			m[n].ranges = xrealloc(m[n].ranges,
			    (m[n].nranges + 1) * sizeof *m[n].ranges);
			m[n].ranges[m[n].nranges][0] = atoi(f);
			m[n].ranges[m[n].nranges][1] = (dash = strchr(f, '-')) ?
			    atoi(dash + 1) : atoi(f);
			m[n].nranges++;
		}
		n++;
	}
	free(text);
	*mp = m;
	return n;
}

void
quorum_masters_free(struct quorum_master *m, int n)
{
	int	i;

	for (i = 0; i < n; i++) {
		url_free(&m[i].url);
		free(m[i].ranges);
	}
	free(m);
}

int
quorum_cluster_run(struct quorum *q, const struct quorum_req *r,
    struct redis_reply ***replies, struct err *e)
{
	const char		**keys = r->keys, **args = r->args;
	int			  nkeys = r->nkeys, nargs = r->nargs;
	struct quorum_master	 *m;
	struct quorum		  mq;
	struct redis_reply	**rep;
	struct url		 *urls;
	const char		**argv;
	char			 *body;
	int			  nm, k, ok, flags, old = 0;

	*replies = NULL;
	if (q->n != 1 || (nm = quorum_cluster_masters(q, 0, &m, e)) <= 0)
		return -1;
	urls = xcalloc(nm, sizeof *urls);
	for (k = 0; k < nm; k++)
		urls[k] = m[k].url;	/* borrowed: freed with m */
	argv = xcalloc(3 + nargs + nkeys, sizeof *argv);
	rep = xcalloc(nm, sizeof *rep);
	/*
	 * Redis 7 lets a script use keys of several slots only with the flag
	 * in its first line; 6.x has no flags (its compiler stops at the
	 * '#') and no such check: there, the same body without the line.
	 */
	for (flags = 1; flags >= 0; flags--) {
		/* ARGV: the script's own arguments, then its keys, back in KEYS. */
		xasprintf(&body, "%s"
		    "local KEYS, ARGV = {}, ARGV\n"
		    "do local a = {} for i = 1, #ARGV do if i <= %d then a[i] = "
		    "ARGV[i] else KEYS[#KEYS + 1] = ARGV[i] end end ARGV = a end\n"
		    "%s", flags ? "#!lua flags=allow-cross-slot-keys\n" : "",
		    nargs, r->script->body);
		argv[0] = "EVAL";
		argv[1] = body;
		argv[2] = "0";
		for (k = 0; k < nargs; k++)
			argv[3 + k] = args[k];
		for (k = 0; k < nkeys; k++)
			argv[3 + nargs + k] = keys[k];
		quorum_init(&mq, urls, nm, q->opts);
		ok = quorum_command(&mq, NULL, 3 + nargs + nkeys, argv, 0, rep,
		    e);
		for (k = old = 0; k < nm; k++)
			old |= rep[k] == NULL &&
			    strstr(mq.errs[k].msg, "near '#'") != NULL;
		quorum_close(&mq);
		free(body);
		if (ok == nm || !flags || !old)
			break;
		quorum_cluster_free(rep, nm);
		rep = xcalloc(nm, sizeof *rep);
	}
	free(urls);
	quorum_masters_free(m, nm);
	free(argv);
	if (ok != nm) {
		quorum_cluster_free(rep, nm);
		return -1;
	}
	*replies = rep;
	return nm;
}

void
quorum_cluster_free(struct redis_reply **rep, int n)
{
	int	i;

	for (i = 0; rep != NULL && i < n; i++)
		redis_reply_free(rep[i]);
	free(rep);
}

int
quorum_scan(struct quorum *q, const char *pattern, quorum_key_fn fn,
    void *arg)
{
	struct redis_reply	**rep;
	const char		 *nodes[] = { "CLUSTER", "NODES" };
	const char		 *scan[] = { "SCAN", "0", "MATCH", pattern,
				    "COUNT", SCAN_COUNT };
	struct err		  e;
	char			 *cursor;
	int			  i, *plain, any = 0, reached = 0;

	rep = xcalloc(q->n, sizeof *rep);
	plain = xcalloc(q->n, sizeof *plain);
	/* Every server at once: is it a Cluster node? */
	quorum_command(q, NULL, 2, nodes, 0, rep, &e);
	for (i = 0; i < q->n; i++) {
		if (rep[i] == NULL && q->errs[i].kind != ERR_REPLY)
			continue;	/* unreachable: errs[i] says why */
		if (rep[i] == NULL || rep[i]->type != REDIS_T_STRING)
			any |= plain[i] = 1;
		else if (scan_masters(q, i, rep[i]->str, pattern, fn, arg,
		    &q->errs[i]) == 0)
			reached++;
	}
	quorum_free_replies(q, rep);
	/* The others at once too: their first page (often the only one). */
	if (any)
		quorum_command(q, plain, 6, scan, 0, rep, &e);
	for (i = 0; any && i < q->n; i++) {
		cursor = NULL;
		if (plain[i] && rep[i] != NULL &&
		    scan_page(q, i, rep[i], fn, arg, &cursor, &q->errs[i]) == 0 &&
		    scan_from(q, i, cursor, 0, pattern, fn, arg,
		    &q->errs[i]) == 0)
			reached++;
		free(cursor);
	}
	if (any)
		quorum_free_replies(q, rep);
	free(rep);
	free(plain);
	return reached;
}
