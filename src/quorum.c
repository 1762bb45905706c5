/* quorum.c: send each lock operation to every server, gather the replies. */

/*
 * The contract: a request goes out on every connection before any reply
 * is read, so n servers cost one round trip.  A server that fails is
 * remembered in errs[] and reconnected on the next request; whether enough
 * servers answered, and what their answers mean, is for lock.c to judge.
 * A server that says it cannot take writes now (a demoted master, one
 * still loading) has its connection dropped, so the next request finds the
 * new master (through the sentinels, for a sentinel URL).
 */

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "quorum.h"
#include "signals.h"
#include "transport.h"
#include "util.h"

/* How long a server that could not be connected to is left alone. */
#define RECONNECT_PAUSE_MS	1000

/*
 * With several servers, one that could not be connected to is not tried
 * again for a while: a silent one would otherwise cost a --connect-timeout
 * on every request before the others were asked.  Alone, it is always
 * tried: there is nothing else to do.
 */
static void
connect_failed(struct quorum *q, int i, const struct err *e)
{
	q->cerrs[i] = *e;
	q->retry_at[i] = now_mono_ms() + RECONNECT_PAUSE_MS;
}

void
quorum_retry_now(struct quorum *q)
{
	int	i;

	for (i = 0; i < q->n; i++)
		q->retry_at[i] = 0;
}

struct redis *
quorum_conn(struct quorum *q, int i, struct err *e)
{
	/* A connect quorum_open left under way is finished here, waiting. */
	if (q->conn[i] != NULL && redis_connecting(q->conn[i]) &&
	    (redis_connect_send(q->conn[i], e) == -1 ||
	    redis_connect_end(q->conn[i], e) == -1)) {
		redis_close(q->conn[i]);
		q->conn[i] = NULL;
		q->errs[i] = *e;
		connect_failed(q, i, e);
		return NULL;
	}
	if (q->conn[i] != NULL && redis_broken(q->conn[i])) {
		redis_close(q->conn[i]);
		q->conn[i] = NULL;
	}
	if (q->conn[i] == NULL) {
		if (q->n > 1 && now_mono_ms() < q->retry_at[i]) {
			*e = q->cerrs[i];
			return NULL;
		}
		q->conn[i] = redis_connect(&q->urls[i], q->opts, e);
		if (q->conn[i] == NULL) {
			q->errs[i] = *e;
			connect_failed(q, i, e);
		}
	}
	return q->conn[i];
}

int
quorum_distinct(struct quorum *q, struct err *e)
{
	const char	*a, *b;
	int		 i, j;

	for (i = 0; i < q->n; i++) {
		if (q->conn[i] == NULL || *(a = redis_run_id(q->conn[i])) == 0)
			continue;
		for (j = i + 1; j < q->n; j++)
			if (q->conn[j] != NULL &&
			    strcmp(a, (b = redis_run_id(q->conn[j]))) == 0) {
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

struct opener {
	struct quorum	*q;
	int		 i;
};

static void *
open_one(void *arg)
{
	struct opener	*o = arg;

	quorum_conn(o->q, o->i, &o->q->errs[o->i]);
	return NULL;
}

/*
 * A sentinel URL asks the sentinels first, and TLS handshakes are work
 * worth spreading over the cores: those connect in threads of their own.
 */
static int
needs_threads(const struct url *urls, int n)
{
	int	i;

	for (i = 0; i < n; i++)
		if (urls[i].scheme == URL_SENTINEL ||
		    urls[i].scheme == URL_TLS)
			return 1;
	return 0;
}

/*
 * Plain connections in three passes -- start every connect, then finish
 * each and send its AUTH and SELECT, then read their replies (unless
 * steps is 1: then the caller's request follows and redis_recv reads
 * them) -- so that the waits overlap: n servers cost the slowest one, with
 * no threads.  With under_way, a connect still in progress (a server
 * that drops our SYNs) is not waited for but marked there, for the caller
 * to finish when it can (await_replies).
 * For the servers marked in want (NULL: all) that have no usable
 * connection and are not being left alone after a failure; Sentinel and
 * TLS URLs are left to quorum_conn.
 */
static void
connect_in_steps(struct quorum *q, const int *want, int steps, int *under_way)
{
	int64_t	 now = now_mono_ms();
	int	*go, i, step;

	go = xcalloc(q->n, sizeof *go);
	for (i = 0; i < q->n; i++) {
		if (want != NULL && !want[i])
			continue;
		if (q->conn[i] != NULL && redis_broken(q->conn[i])) {
			redis_close(q->conn[i]);
			q->conn[i] = NULL;
		}
		if (q->conn[i] != NULL || needs_threads(&q->urls[i], 1) ||
		    now < q->retry_at[i])
			continue;
		err_clear(&q->errs[i]);
		if ((q->conn[i] = redis_connect_start(&q->urls[i], q->opts,
		    &q->errs[i])) == NULL)
			connect_failed(q, i, &q->errs[i]);
		else
			go[i] = 1;
	}
	for (step = 0; step < steps; step++)
		for (i = 0; i < q->n; i++) {
			if (!go[i] || q->conn[i] == NULL ||
			    (under_way != NULL && under_way[i]))
				continue;
			if (under_way != NULL && step == 0 &&
			    !redis_connected(q->conn[i])) {
				under_way[i] = 1;
				continue;
			}
			if ((step == 0 ? redis_connect_send(q->conn[i],
			    &q->errs[i]) : redis_connect_end(q->conn[i],
			    &q->errs[i])) == 0)
				continue;
			redis_close(q->conn[i]);
			q->conn[i] = NULL;
			connect_failed(q, i, &q->errs[i]);
		}
	free(go);
}

void
quorum_init(struct quorum *q, const struct url *urls, int n,
    const struct redis_opts *opts)
{
	q->n = n;
	q->urls = urls;
	q->opts = opts;
	q->conn = xcalloc(n, sizeof *q->conn);
	q->errs = xcalloc(n, sizeof *q->errs);
	q->cerrs = xcalloc(n, sizeof *q->cerrs);
	q->retry_at = xcalloc(n, sizeof *q->retry_at);
}

int
quorum_open(struct quorum *q, const struct url *urls, int n,
    const struct redis_opts *opts, struct err *e)
{
	struct opener	*op;
	pthread_t	*th;
	int		 i, ok = 0, first = -1, *started, *under_way;

	quorum_init(q, urls, n, opts);
	if (n == 1)
		quorum_conn(q, 0, &q->errs[0]);
	else if (!needs_threads(urls, n)) {
		/*
		 * A connect still under way is finished by the first request,
		 * and the handshake's replies are read with its reply: a
		 * server that accepts but answers nothing (a stopped process)
		 * then costs the request's --timeout at most, side by side
		 * with the others, not a --connect-timeout of its own first.
		 */
		under_way = xcalloc(n, sizeof *under_way);
		connect_in_steps(q, NULL, 1, under_way);
		free(under_way);
	}
	else {
		/* Connects block on their own deadlines: one thread each. */
		op = xcalloc(n, sizeof *op);
		th = xcalloc(n, sizeof *th);
		started = xcalloc(n, sizeof *started);
		for (i = 0; i < n; i++) {
			op[i].q = q;
			op[i].i = i;
			started[i] = pthread_create(&th[i], NULL, open_one,
			    &op[i]) == 0;
			if (!started[i])
				open_one(&op[i]);
		}
		for (i = 0; i < n; i++)
			if (started[i])
				pthread_join(th[i], NULL);
		free(op);
		free(th);
		free(started);
	}
	for (i = 0; i < n; i++) {
		if (q->conn[i] != NULL)
			ok++;
		else if (first == -1 || q->errs[i].kind == ERR_INTERRUPTED)
			first = i;
	}
	if (ok >= quorum_majority(q))
		return 0;
	*e = q->errs[first];
	if (n > 1 && e->kind != ERR_INTERRUPTED)
		err_prefix(e, "only %d of %d servers answered, and a lock "
		    "needs %d", ok, n, quorum_majority(q));
	return -1;
}

void
quorum_close(struct quorum *q)
{
	int	i;

	for (i = 0; q->conn != NULL && i < q->n; i++)
		redis_close(q->conn[i]);
	free(q->conn);
	free(q->errs);
	free(q->cerrs);
	free(q->retry_at);
	q->conn = NULL;
	q->errs = NULL;
	q->cerrs = NULL;
	q->retry_at = NULL;
}

/* What to send on each connection: a script, or a plain command. */
struct request {
	struct script	 *script;
	int		  nkeys, nargs;
	const char	**keys, **args;
	int		  argc;
	const char	**argv;
	int64_t		  extra_ms;
	const char	 *wait_key;	/* a BLPOP first (the first send only) */
	int64_t		  wait_ms;
};

static int
is_not_writable(const char *err)
{
	return strncmp(err, "READONLY", 8) == 0 ||
	    strncmp(err, "MASTERDOWN", 10) == 0 ||
	    strncmp(err, "LOADING", 7) == 0;
}

static int
send_one(struct quorum *q, int i, const struct request *rq, int again)
{
	struct redis	*r;

	err_clear(&q->errs[i]);
	if ((r = quorum_conn(q, i, &q->errs[i])) == NULL)
		return -1;
	if (rq->script != NULL)
		return redis_send_wait_script(r, again ? NULL : rq->wait_key,
		    rq->wait_ms, rq->script, rq->nkeys, rq->keys, rq->nargs,
		    rq->args, &q->errs[i]);
	return redis_send(r, rq->argc, rq->argv, NULL, rq->extra_ms,
	    &q->errs[i]);
}

/* 0 with replies[i] set, 1 to ask again elsewhere (READONLY), -1. */
static int
recv_one(struct quorum *q, int i, struct redis_reply **replies)
{
	int	again;

	if (redis_recv(q->conn[i], &replies[i], &q->errs[i]) == -1)
		return -1;
	if (replies[i]->type != REDIS_T_ERROR)
		return 0;
	redis_reply_error(q->conn[i], replies[i], "", &q->errs[i]);
	again = strncmp(replies[i]->str, "READONLY", 8) == 0;
	if (is_not_writable(replies[i]->str))
		redis_abandon(q->conn[i]);
	redis_reply_free(replies[i]);
	replies[i] = NULL;
	return again ? 1 : -1;
}

/*
 * Wait for the replies of the servers asked, whichever answers first,
 * each until its own deadline; stop early (after a short grace) once
 * `settled` says the answers so far decide the outcome (a majority
 * granted, say), so that one frozen server does not hold up what the
 * others have already decided.  The requests still out are abandoned:
 * their connections are dropped and made again when next needed.
 */
/* awaiting[i] of a server whose connect is still under way. */
#define CONNECTING	2

static void
await_replies(struct quorum *q, const struct request *rq, int *awaiting,
    struct redis_reply **replies, quorum_settled_fn settled, void *arg)
{
	struct pollfd	*pfd;
	int64_t		 now, wait, dl, start = now_mono_ms(), grace = -1;
	int		*done, i, left, n;
	char		 d[32];

	pfd = xcalloc(q->n, sizeof *pfd);
	done = xcalloc(q->n, sizeof *done);
	for (i = 0; i < q->n; i++)
		done[i] = !awaiting[i];
	for (;;) {
		now = now_mono_ms();
		/*
		 * Once the outcome is decided, the others still get a grace
		 * of twice the time taken so far (at least 10 ms): a lock
		 * held on every server survives the loss of one later, so a
		 * healthy straggler should not be left out; a frozen one
		 * costs only the grace.
		 */
		if (settled != NULL && grace < 0 &&
		    settled(replies, done, q->n, arg))
			grace = now + (now - start > 5 ? 2 * (now - start) :
			    10);
		if (grace >= 0 && now >= grace)
			break;
		wait = -1;
		for (i = left = 0; i < q->n; i++) {
			pfd[i].fd = awaiting[i] ? redis_fd(q->conn[i]) : -1;
			pfd[i].events = awaiting[i] == CONNECTING ? POLLOUT :
			    POLLIN;
			pfd[i].revents = 0;
			if (!awaiting[i])
				continue;
			left++;
			dl = redis_deadline(q->conn[i]) - now;
			if (grace >= 0 && grace - now < dl)
				dl = grace - now;
			if (dl < 0)
				dl = 0;
			if (wait < 0 || dl < wait)
				wait = dl;
		}
		/* A signal that came outside poll is answered here. */
		if (left == 0 || signal_caught)
			break;
		n = poll(pfd, q->n, wait > INT32_MAX ? INT32_MAX : (int)wait);
		if (n < 0 && signal_caught)
			break;
		now = now_mono_ms();
		for (i = 0; i < q->n; i++) {
			if (!awaiting[i])
				continue;
			if (awaiting[i] == CONNECTING) {
				if (pfd[i].revents == 0 &&
				    now < redis_deadline(q->conn[i]))
					continue;
				/* Connected (or failed): ask it now. */
				if (redis_connect_send(q->conn[i],
				    &q->errs[i]) == 0 &&
				    send_one(q, i, rq, 0) == 0) {
					awaiting[i] = 1;
					continue;
				}
				if (q->conn[i] != NULL &&
				    !redis_connected(q->conn[i]))
					connect_failed(q, i, &q->errs[i]);
				redis_abandon(q->conn[i]);
			} else if (pfd[i].revents != 0) {
				/* A READONLY server is asked once more anew. */
				if (recv_one(q, i, replies) == 1 &&
				    send_one(q, i, rq, 1) == 0)
					recv_one(q, i, replies);
			} else if (now >= redis_deadline(q->conn[i])) {
				redis_abandon(q->conn[i]);
				err_set(&q->errs[i], ERR_UNAVAILABLE, "%s: no "
				    "reply within %s (--timeout)",
				    q->urls[i].display, duration_format(
				    q->opts->timeout_ms, d, sizeof d));
			} else
				continue;
			awaiting[i] = 0;
			done[i] = 1;
		}
	}
	for (i = 0; i < q->n; i++) {
		if (!awaiting[i])
			continue;
		redis_abandon(q->conn[i]);
		if (signal_caught)
			err_set(&q->errs[i], ERR_INTERRUPTED,
			    "interrupted by a signal");
		else
			err_set(&q->errs[i], ERR_UNAVAILABLE, "%s: no answer "
			    "needed once the others had decided",
			    q->urls[i].display);
	}
	free(pfd);
	free(done);
}

static int
gather(struct quorum *q, const int *only, const struct request *rq,
    quorum_settled_fn settled, void *arg, struct redis_reply **replies,
    struct err *e)
{
	int	i, ok = 0, asked = 0, first = -1, reconnect = 0, *sent, *need;
	int	*under_way;

	sent = xcalloc(q->n, sizeof *sent);
	need = xcalloc(q->n, sizeof *need);
	under_way = xcalloc(q->n, sizeof *under_way);
	/*
	 * The servers already connected are asked first; those that need a
	 * new connection get theirs side by side (connect_in_steps), so that
	 * a silent one holds up neither the others' requests nor their
	 * connects by more than one --connect-timeout.
	 */
	for (i = 0; i < q->n; i++) {
		replies[i] = NULL;
		if (only != NULL && !only[i])
			continue;
		asked++;
		if (q->n > 1 && (q->conn[i] == NULL ||
		    redis_broken(q->conn[i])))
			reconnect = need[i] = 1;
		else if (q->n > 1 && redis_connecting(q->conn[i]))
			under_way[i] = 1;	/* left by quorum_open */
		else
			sent[i] = send_one(q, i, rq, 0) == 0;
	}
	if (reconnect) {
		/*
		 * Each request follows its AUTH, whose reply is read in the
		 * await; a connect still under way is finished there too.
		 */
		connect_in_steps(q, need, 1, under_way);
		for (i = 0; i < q->n; i++)
			if (need[i] && !under_way[i])
				sent[i] = send_one(q, i, rq, 0) == 0;
	}
	for (i = 0; i < q->n; i++)
		if (under_way[i])
			sent[i] = CONNECTING;
	await_replies(q, rq, sent, replies, settled, arg);
	free(sent);
	free(need);
	free(under_way);
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
	return ok;
}

int
quorum_script_until(struct quorum *q, const int *only,
    quorum_settled_fn settled, void *arg, struct script *s, int nkeys,
    const char **keys, int nargs, const char **args,
    struct redis_reply **replies, struct err *e)
{
	struct request	rq = {
		.script = s, .nkeys = nkeys, .keys = keys, .nargs = nargs,
		.args = args,
	};

	return gather(q, only, &rq, settled, arg, replies, e);
}

int
quorum_wait_script(struct quorum *q, const char *key, int64_t wait_ms,
    quorum_settled_fn settled, void *arg, struct script *s, int nkeys,
    const char **keys, int nargs, const char **args,
    struct redis_reply **replies, struct err *e)
{
	struct request	rq = {
		.script = s, .nkeys = nkeys, .keys = keys, .nargs = nargs,
		.args = args, .wait_key = key, .wait_ms = wait_ms,
	};

	return gather(q, NULL, &rq, settled, arg, replies, e);
}

int
quorum_script(struct quorum *q, const int *only, struct script *s, int nkeys,
    const char **keys, int nargs, const char **args,
    struct redis_reply **replies, struct err *e)
{
	return quorum_script_until(q, only, NULL, NULL, s, nkeys, keys, nargs,
	    args, replies, e);
}

int
quorum_command(struct quorum *q, const int *only, int argc, const char **argv,
    int64_t extra_ms, struct redis_reply **replies, struct err *e)
{
	struct request	rq = { .argc = argc, .argv = argv, .extra_ms = extra_ms };

	return gather(q, only, &rq, NULL, NULL, replies, e);
}

/*
 * BLPOP on every server that can be asked; the first to answer with an
 * element wakes us.  The others' BLPOPs cannot be taken back, so their
 * connections are dropped (and made again when next needed): a late pop
 * there only wakes no one, and the element expires.
 */
int
quorum_wait(struct quorum *q, const char *key, int64_t timeout_ms,
    struct err *e)
{
	struct redis_reply	*rr;
	struct pollfd		*pfd;
	const char		*argv[3];
	char			 secs[32];
	int			*sent, i, n, live = 0, woken = 0, done = 0;

	if (timeout_ms < 1)
		timeout_ms = 1;
	redis_timeout_arg(secs, sizeof secs, timeout_ms);
	argv[0] = "BLPOP";
	argv[1] = key;
	argv[2] = secs;
	sent = xcalloc(q->n, sizeof *sent);
	pfd = xcalloc(q->n, sizeof *pfd);
	for (i = 0; i < q->n; i++) {
		err_clear(&q->errs[i]);
		if (quorum_conn(q, i, &q->errs[i]) == NULL ||
		    redis_send(q->conn[i], 3, argv, NULL, timeout_ms,
		    &q->errs[i]) == -1) {
			if (q->errs[i].kind == ERR_INTERRUPTED)
				break;
			continue;
		}
		sent[i] = 1;
		live++;
	}
	if (live == 0) {
		for (i = 0; i < q->n && q->errs[i].kind == ERR_NONE; i++)
			;
		*e = q->errs[i < q->n ? i : 0];
		free(sent);
		free(pfd);
		return -1;
	}
	while (!done) {
		if (q->n == 1 || live == 1) {
			/* One to wait on: its own deadline bounds the wait. */
			for (i = 0; !sent[i]; i++)
				;
		} else {
			for (i = 0; i < q->n; i++) {
				pfd[i].fd = sent[i] ? redis_fd(q->conn[i]) : -1;
				pfd[i].events = POLLIN;
				pfd[i].revents = 0;
			}
			n = poll(pfd, q->n, (int)(timeout_ms + 1000));
			if (n <= 0)
				break;
			for (i = 0; i < q->n && !(sent[i] && pfd[i].revents);
			    i++)
				;
			if (i == q->n)
				break;
		}
		sent[i] = 0;
		live--;
		if (redis_recv(q->conn[i], &rr, &q->errs[i]) == -1) {
			if (q->errs[i].kind == ERR_INTERRUPTED) {
				*e = q->errs[i];
				woken = -1;
				done = 1;
			}
		} else {
			woken = rr->type == REDIS_T_ARRAY;
			redis_reply_free(rr);
			done = woken || live == 0;
		}
		if (live == 0)
			done = 1;
	}
	for (i = 0; i < q->n; i++)
		if (sent[i])
			redis_abandon(q->conn[i]);
	free(sent);
	free(pfd);
	return woken;
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
