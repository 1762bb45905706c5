/* redis.c: one Redis server: its connection's whole life, and one request at a time. */

/*
 * A struct redis is one server as the user named it, and owns everything
 * it takes to talk to it: the transport (every address of the host, the
 * TLS handshake), AUTH, SELECT and INFO, the Sentinel lookup that says
 * where the master is, and the MOVED/ASK redirections of a Cluster.  All
 * of it moves forward in non-blocking steps: the caller polls the sockets
 * redis_pollfds names, until redis_deadline, and calls redis_step, which
 * does what it can and says pending, done or failed.  quorum.c runs one
 * poll() loop over N of them; nothing above it knows a socket exists.
 *
 * This file is the connection and the request's steps.  What a reply may
 * be and what it says in words is redis-reply.c; the doors of a Cluster
 * and its redirections, cluster.c; the Sentinel lookup, sentinel.c.  They
 * share struct redis through redis-private.h.
 *
 * hiredis is used for exactly two things that every version has: the
 * RESP reader (redisReader) and the command formatter
 * (redisFormatCommandArgv).  A connection carries at most one request in
 * flight (quorum.c gets its parallelism from one connection per server);
 * the handshake's commands go out in the same write as the request, and
 * their replies are checked before the request's.  Any failure closes the
 * connection: a late reply to an abandoned request must never be taken for
 * the answer to the next one.  The next request connects again.
 *
 * Time: a connect (the Sentinel lookup, TCP, TLS, and the replies to the
 * handshake) is due within --connect-timeout of its start; a request's
 * reply within --timeout of its sending, plus what the command may block
 * on the server (BLPOP, WAIT).  Over both, each request has one deadline
 * of its own, fixed when it is started (redis_start): --connect-timeout
 * plus --timeout plus that blocking.  Every connect and every sending of
 * it -- a redirection, a door changed, a resend after TRYAGAIN or
 * NOSCRIPT, a reconnection -- is bounded by it and none moves it, so that
 * nodes that send a request back and forth for ever (a slot MIGRATING
 * toward a node that is not IMPORTING it) cost the caller that much and
 * no more.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "duration.h"
#include "log.h"
#include "redis-private.h"
#include "util.h"

static int	step(struct redis *, struct err *);

/*
 * ms from now, but never past the request's own deadline (none when no
 * request is in flight: a connect made ahead of one).
 */
int64_t
redis_within(const struct redis *r, int64_t ms)
{
	int64_t	t = now_mono_ms() + ms;

	return r->pending && r->req_deadline < t ? r->req_deadline : t;
}

static void	note_wait_error(struct redis *, const struct redis_reply *);

/* The run_id line of an INFO reply, into r->run_id ("" if none). */
static void
note_run_id(struct redis *r, const struct redis_reply *rr)
{
	const char	*p;
	size_t		 n;

	r->run_id[0] = '\0';
	if (rr->type != REDIS_T_STRING ||
	    (p = strstr(rr->str, "run_id:")) == NULL)
		return;
	p += 7;
	n = strcspn(p, "\r\n");
	if (n >= sizeof r->run_id)
		n = sizeof r->run_id - 1;
	memcpy(r->run_id, p, n);
	r->run_id[n] = '\0';
}

const char *
redis_display(const struct redis *r)
{
	return r->url->display;
}

const char *
redis_run_id(const struct redis *r)
{
	return r->run_id;
}

int
redis_connect_failed(const struct redis *r)
{
	return r->connect_failed;
}

int
redis_reached(const struct redis *r)
{
	return r->reached;
}

struct redis *
redis_new(const struct url *u, const struct redis_opts *opts)
{
	struct redis	*r = xcalloc(1, sizeof *r);

	r->orig = r->url = u;
	r->opts = opts;
	r->body_at = SIZE_MAX;
	r->door = r->slot = -1;
	if (u->nseeds > 0)
		cluster_doors_init(r);
	return r;
}

/* ------------------------------------------------------------ failing */


/*
 * Close the connection and drop what was queued for it, wiped first (AUTH's
 * password may be in there), and what it was due to answer.
 */
void
redis_drop_connection(struct redis *r)
{
	transport_close(r->t);
	r->t = NULL;
	if (r->out != NULL)
		explicit_bzero(r->out, r->outlen);
	free(r->out);
	r->out = NULL;
	r->outlen = r->outoff = 0;
	r->body_at = SIZE_MAX;
	r->ndue = 0;
}
/* Close the connection; the next request connects again. */
static void
disconnect(struct redis *r)
{
	redis_drop_connection(r);
	sentinel_stop(r);
	r->state = IDLE;
	r->handshaken = 0;
}

void
redis_abandon(struct redis *r)
{
	disconnect(r);
	r->pending = 0;
}

/*
 * Fail the request: e names the server ("cannot connect to URL: why" for
 * a connect, "URL: why" after), except for an interruption or a bad
 * setting of the user's (a certificate file), which stand alone.
 */
int
redis_fail(struct redis *r, struct err *e, int connecting)
{
	size_t	n;
	int	others = 0, i, rc;

	if (e->kind != ERR_INTERRUPTED && e->kind != ERR_USAGE) {
		if (connecting)
			err_prefix(e, "cannot connect to %s", r->url->display);
		else
			err_prefix(e, "%s", r->url->display);
	}
	if ((rc = cluster_next_door(r, e)) == 1)
		return 0;
	connecting |= rc == 2;
	for (i = 0; i < r->ndoors; i++)
		others += i != r->door && (r->tried & (1ULL << i));
	if (others > 0 && (n = strlen(e->msg)) < sizeof e->msg)
		snprintf(e->msg + n, sizeof e->msg - n, " (%d nodes of the "
		    "cluster tried)", others + 1);
	r->connect_failed = connecting;
	redis_abandon(r);
	return -1;
}


/* ------------------------------------------------------------ sending */

/* A command already in RESP (len bytes), queued with what is due back. */
static void
queue_formatted(struct redis *r, enum due d, const char *cmd, int len)
{
	r->out = xrealloc(r->out, r->outlen + (size_t)len);
	memcpy(r->out + r->outlen, cmd, (size_t)len);
	r->outlen += (size_t)len;
	r->due[r->ndue++] = d;
}

/* Queue argv to be written, its reply due as d. */
static int
queue(struct redis *r, enum due d, int argc, const char **argv,
    const size_t *argvlen, struct err *e)
{
	char	*cmd;
	int	 len;

	if ((len = redisFormatCommandArgv(&cmd, argc, argv, argvlen)) < 0) {
		err_set(e, ERR_SOFTWARE, "cannot format a Redis command");
		return -1;
	}
	queue_formatted(r, d, cmd, len);
	if (d == DUE_AUTH)	/* leave the password in no freed memory */
		explicit_bzero(cmd, (size_t)len);
	free(cmd);
	return 0;
}

/* EVALSHA (or, after NOSCRIPT, EVAL) of the request's script. */
static int
queue_script(struct redis *r, int use_sha, struct err *e)
{
	const struct redis_req	 *q = r->req;
	const char		**argv;
	char			  nk[16];
	int			  argc = 3 + q->nkeys + q->nargs, i, len;

	/* Another server of the round formatted it already. */
	if (use_sha && q->sent != NULL && q->sent->cmd != NULL) {
		queue_formatted(r, DUE_MAIN, q->sent->cmd, q->sent->len);
		return 0;
	}
	argv = xcalloc(argc, sizeof *argv);
	argv[0] = use_sha ? "EVALSHA" : "EVAL";
	argv[1] = use_sha ? q->script->sha : q->script->body;
	snprintf(nk, sizeof nk, "%d", q->nkeys);
	argv[2] = nk;
	for (i = 0; i < q->nkeys; i++)
		argv[3 + i] = q->keys[i];
	for (i = 0; i < q->nargs; i++)
		argv[3 + q->nkeys + i] = q->args[i];
	if (!use_sha || q->sent == NULL) {
		i = queue(r, DUE_MAIN, argc, argv, NULL, e);
		free(argv);
		return i;
	}
	len = redisFormatCommandArgv(&q->sent->cmd, argc, argv, NULL);
	free(argv);
	if (len < 0) {
		q->sent->cmd = NULL;
		err_set(e, ERR_SOFTWARE, "cannot format a Redis command");
		return -1;
	}
	q->sent->len = len;
	queue_formatted(r, DUE_MAIN, q->sent->cmd, len);
	return 0;
}

/*
 * AUTH (with the URL's user, if any), SELECT the URL's db, INFO server to
 * tell servers apart in a quorum (or to refuse an old server before a
 * command that sends no script), and ROLE for a master the sentinels
 * named: the first request on a new connection goes behind them.
 */
static int
queue_handshake(struct redis *r, struct err *e)
{
	const char	*password = r->url->password ? r->url->password :
			    r->opts->password;
	const char	*argv[3];
	char		 db[16];
	int		 argc = 0, rc = 0;

	if (password != NULL) {
		argv[argc++] = "AUTH";
		if (r->url->user != NULL)
			argv[argc++] = r->url->user;
		argv[argc++] = password;
		rc |= queue(r, DUE_AUTH, argc, argv, NULL, e);
	}
	if (r->url->db > 0) {
		snprintf(db, sizeof db, "%d", r->url->db);
		argv[0] = "SELECT";
		argv[1] = db;
		rc |= queue(r, DUE_SELECT, 2, argv, NULL, e);
	}
	if (r->opts->identify || r->opts->check_version) {
		argv[0] = "INFO";
		argv[1] = "server";
		rc |= queue(r, DUE_INFO, 2, argv, NULL, e);
	}
	if (r->check_role) {
		argv[0] = "ROLE";
		rc |= queue(r, DUE_ROLE, 1, argv, NULL, e);
	}
	r->handshaken = 1;
	return rc;
}

/* Whether an AUTH or SELECT reply is still due. */
static int
authenticating(const struct redis *r)
{
	int	i;

	for (i = 0; i < r->ndue; i++)
		if (r->due[i] == DUE_AUTH || r->due[i] == DUE_SELECT)
			return 1;
	return 0;
}

/* The request itself: ASKING, the BLPOP, the command or script. */
static int
queue_body(struct redis *r, struct err *e)
{
	const struct redis_req	*q = r->req;
	const char		*argv[4];
	char			 secs[32];
	int			 argc;

	r->holding = 0;
	r->body_at = r->outlen;
	r->asked = r->ask;
	if (r->ask) {
		argv[0] = "ASKING";
		if (queue(r, DUE_ASKING, 1, argv, NULL, e) == -1)
			return -1;
		r->ask = 0;
	}
	r->deadline = redis_within(r, r->opts->timeout_ms + q->extra_ms);
	if (q->wait_key != NULL && !r->waited) {
		redis_timeout_arg(secs, sizeof secs, q->wait_ms);
		argc = 0;
		argv[argc++] = "BLPOP";
		argv[argc++] = q->wait_key;
		if (q->wait_key2 != NULL)
			argv[argc++] = q->wait_key2;
		argv[argc++] = secs;
		if (queue(r, DUE_BLPOP, argc, argv, NULL, e) == -1)
			return -1;
		r->deadline = redis_within(r, r->opts->timeout_ms +
		    q->extra_ms + (q->wait_ms < 1 ? 1 : q->wait_ms));
	}
	if (q->script != NULL)
		return queue_script(r, 1, e);
	return queue(r, DUE_MAIN, q->argc, q->argv, q->argvlen, e);
}

/*
 * The request, behind what a new connection needs.  It waits for the
 * replies to AUTH and SELECT: sent behind a failed AUTH, it would run as
 * the default user, and behind a failed SELECT, in db 0.  INFO and ROLE
 * need no such wait.
 */
static int
queue_request(struct redis *r, struct err *e)
{
	if (!r->handshaken && queue_handshake(r, e) == -1)
		return -1;
	if (authenticating(r)) {
		/* Until they answer, the connect's bound is the one. */
		r->holding = 1;
		r->deadline = r->connect_deadline;
		return 0;
	}
	return queue_body(r, e);
}

/* Write what is queued, as far as the socket takes it now. */
static int
flush(struct redis *r, struct err *e)
{
	ssize_t	n;

	while (r->outoff < r->outlen) {
		n = transport_write(r->t, r->out + r->outoff,
		    r->outlen - r->outoff, e);
		if (n == -1)
			return -1;
		if (n == 0)
			return 0;
		r->outoff += (size_t)n;
		if (r->outoff > r->body_at)
			r->reached = 1;
	}
	/* Wipe it: AUTH's password may be in there. */
	if (r->out != NULL)
		explicit_bzero(r->out, r->outlen);
	free(r->out);
	r->out = NULL;
	r->outlen = r->outoff = 0;
	r->body_at = SIZE_MAX;
	return 0;
}

/* ------------------------------------------------------------ connecting */

static int
new_reader(struct redis *r, struct err *e)
{
	if (r->reader != NULL)
		redisReaderFree(r->reader);
	memset(&r->bound, 0, sizeof r->bound);
	if ((r->reader = redisReaderCreate()) == NULL) {
		err_set(e, ERR_SOFTWARE, "out of memory");
		return -1;
	}
	return 0;
}

/* Open the transport to r->url. */
int
redis_open_transport(struct redis *r, struct err *e)
{
	if (new_reader(r, e) == -1 ||
	    (r->t = transport_open(r->url, r->opts->tls, e)) == NULL)
		return -1;
	r->handshaken = 0;
	r->state = CONNECTING;
	r->conn_gen++;
	return 0;
}


/* Start connecting to where the URL says (asking the sentinels first). */
static int
begin_connect(struct redis *r, struct err *e)
{
	r->connect_deadline = redis_within(r, r->opts->connect_timeout_ms);
	r->check_role = 0;
	r->url = r->orig;	/* not a node a redirection named */
	r->door = -1;
	/* A Cluster: the slot's owner if known, else the last door that answered. */
	if (r->ndoors > 0)
		return cluster_enter_any_door(r, e);
	if (r->orig->scheme == URL_SENTINEL) {
		sentinel_begin(r);
		return 0;
	}
	return redis_open_transport(r, e);
}

int
redis_prepare(struct redis *r, struct err *e)
{
	if (r->state == READY && !r->pending && !transport_idle_ok(r->t))
		disconnect(r);
	if (r->state != IDLE)
		return 0;
	if (begin_connect(r, e) == -1)
		return redis_fail(r, e, 1);
	return 0;
}

/* ------------------------------------------------------------ replies */

/* The next whole reply, if one has come: 1, 0 none yet, -1 failed. */
static int
next_reply(struct redis *r, struct redis_reply **out, struct err *e)
{
	redisReply	*reply = NULL;
	char		 buf[16384];
	ssize_t		 n;

	for (;;) {
		if (redisReaderGetReply(r->reader, (void **)&reply) != REDIS_OK) {
			err_set(e, ERR_PROTOCOL, "protocol error: %s",
			    r->reader->errstr);
			return -1;
		}
		if (reply != NULL)
			break;
		/*
		 * A server that keeps sending keeps this loop going: the
		 * deadline is the caller's to enforce, so go back to it.
		 */
		if (now_mono_ms() >= redis_deadline(r))
			return 0;
		if ((n = transport_read(r->t, buf, sizeof buf, e)) <= 0)
			return (int)n;
		if (redis_bound_scan(&r->bound, buf, (size_t)n, e) == -1)
			return -1;
		redisReaderFeed(r->reader, buf, (size_t)n);
	}
	*out = redis_convert(reply);
	freeReplyObject(reply);
	return 1;
}

/* A handshake reply: 0 fine, -1 the connection is no good (e filled). */
static int
handshake_reply(struct redis *r, enum due d, struct redis_reply *rr,
    struct err *e)
{
	static const char *const what[] = {
		[DUE_AUTH] = "authentication failed: ",
		[DUE_SELECT] = "SELECT failed: ",
		[DUE_INFO] = "INFO failed (a quorum needs it to tell servers "
		    "apart): ",
		[DUE_ROLE] = "ROLE failed: ",
	};

	/* INFO asked only for the version may be refused (ACL). */
	if (rr->type == REDIS_T_ERROR && d == DUE_INFO && !r->opts->identify)
		return 0;
	if (rr->type == REDIS_T_ERROR && d != DUE_ASKING) {
		redis_reply_error(r, rr, what[d], e);
		return -1;
	}
	if (d == DUE_INFO && redis_too_old(r, rr, e))
		return -1;
	if (d == DUE_INFO)
		note_run_id(r, rr);
	if (d == DUE_ROLE && !(rr->type == REDIS_T_ARRAY && rr->elements > 0 &&
	    rr->element[0]->type == REDIS_T_STRING &&
	    strcmp(rr->element[0]->str, "master") == 0)) {
		err_set(e, ERR_REPLY, "%s: the sentinels name %s as master "
		    "'%s', but it is not a master (a failover may be under "
		    "way; try again)", r->orig->display, r->url->display,
		    r->orig->master);
		return -1;
	}
	return 0;
}



/*
 * The request's own reply: 1 done, 0 it went out again (EVAL after
 * NOSCRIPT, or to another node), -1 failed.
 */
static int
main_reply(struct redis *r, struct redis_reply *rr, struct err *e)
{
	if (rr->type == REDIS_T_ERROR) {
		/*
		 * The script cache is empty after a restart, a failover or
		 * SCRIPT FLUSH: send the body once, which also loads it.
		 * A new request, with a round trip of its own.
		 */
		if (r->req->script != NULL &&
		    strncmp(rr->str, "NOSCRIPT", 8) == 0) {
			const char	*asking[1] = { "ASKING" };

			redis_reply_free(rr);
			r->deadline = redis_within(r, r->opts->timeout_ms);
			/*
			 * On an ASK target (a node importing the slot, which
			 * may never have run rlock), the EVAL needs its
			 * ASKING too, or it is sent back with MOVED.
			 */
			if (r->asked && queue(r, DUE_ASKING, 1, asking, NULL,
			    e) == -1)
				return -1;
			return queue_script(r, 0, e) == -1 ? -1 : 0;
		}
		/*
		 * The slot is migrating and the keys are partly moved:
		 * nothing ran (or a script met a key that is not here, see
		 * moving_in_script).  Send it
		 * again after a short pause, to the same node (with ASKING
		 * again if it went with it), within the same deadline; the
		 * last refusal is the reply if the move outlasts it.
		 */
		if ((strncmp(rr->str, "TRYAGAIN", 8) == 0 ||
		    redis_moving_in_script(rr->str)) && cluster_resend_later(r, r->asked, 0)) {
			redis_reply_free(rr);
			return 0;
		}
		if ((strncmp(rr->str, "MOVED ", 6) == 0 ||
		    strncmp(rr->str, "ASK ", 4) == 0) &&
		    r->hops++ < MAX_REDIRECTS) {
			int rc = cluster_redirect(r, rr->str, e);

			redis_reply_free(rr);
			return rc == -1 ? -1 : 0;
		}
		/*
		 * Nodes sending it back and forth: the end of a move whose
		 * last CLUSTER SETSLOT has not reached every node yet, or a
		 * failover being learnt.  Paused and sent again like a
		 * TRYAGAIN, within the same deadline.
		 */
		if ((strncmp(rr->str, "MOVED ", 6) == 0 ||
		    strncmp(rr->str, "ASK ", 4) == 0) && cluster_resend_later(r, 0, 1)) {
			redis_reply_free(rr);
			return 0;
		}
	}
	/* The node answered for the slot: requests for it start there. */
	if (r->door >= 0 && !r->asked && (rr->type != REDIS_T_ERROR ||
	    !redis_passing_words(r, rr->str, NULL, 0))) {
		if (r->slot >= 0)
			r->slots[r->slot] = (short)r->door;
		r->home = r->door;
	}
	r->reply = rr;
	r->pending = 0;
	r->wrote_gen = r->conn_gen;
	return 1;
}

/* Whether replies to the handshake are still due. */
static int
handshaking(const struct redis *r)
{
	return r->ndue > 0 && r->due[0] <= DUE_ROLE;
}

/* Read what has come: 1 the request is done, 0 pending, -1 failed. */
static int
step_ready(struct redis *r, struct err *e)
{
	struct redis_reply	*rr;
	enum due		 d;
	int			 rc;

	if (flush(r, e) == -1)
		return redis_fail(r, e, 0);
	while (r->state == READY && r->ndue > 0) {
		if ((rc = next_reply(r, &rr, e)) == -1)
			return redis_fail(r, e, handshaking(r));
		if (rc == 0)
			return 0;
		d = r->due[0];
		memmove(r->due, r->due + 1, --r->ndue * sizeof *r->due);
		if (d == DUE_MAIN) {
			if ((rc = main_reply(r, rr, e)) == -1)
				return redis_fail(r, e, 0);
			if (rc == 1)
				return 1;
			if (r->state != READY)
				return step(r, e);	/* redirected */
			if (flush(r, e) == -1)
				return redis_fail(r, e, 0);
			continue;
		}
		if (d == DUE_BLPOP) {
			/*
			 * Popped or timed out, the script ran right after it:
			 * its reply is the one that counts, a round trip from
			 * now.  An error reply did not wait at all: it is kept
			 * for the caller (redis_wait_error), who must not send
			 * the next one at once.  A redirection is the script's
			 * business.
			 */
			r->deadline = redis_within(r, r->opts->timeout_ms);
			if (rr->type == REDIS_T_ERROR)
				note_wait_error(r, rr);
			r->popped = rr->type == REDIS_T_ARRAY;
		} else if (handshake_reply(r, d, rr, e) == -1) {
			redis_reply_free(rr);
			/* Not a master: what do the other sentinels say? */
			if (d == DUE_ROLE &&
			    strstr(e->msg, "it is not a master") != NULL) {
				if (sentinel_refused(r, e) == 0)
					return step(r, e);
				err_prefix(e, "%s", r->orig->display);
			}
			/* Our credentials or db are wrong: no message prefix. */
			r->connect_failed = 1;
			redis_abandon(r);
			return -1;
		}
		redis_reply_free(rr);
		if (r->holding && !authenticating(r) &&
		    (queue_body(r, e) == -1 || flush(r, e) == -1))
			return redis_fail(r, e, 0);
	}
	return 0;
}

int64_t
redis_deadline(const struct redis *r)
{
	switch (r->state) {
	case IDLE:
		break;
	case RESOLVING:
	case CONNECTING:
		return r->connect_deadline;
	case READY:
		if (handshaking(r) && r->connect_deadline < r->deadline)
			return r->connect_deadline;
		return r->deadline;
	}
	return -1;
}


/* The deadline has passed: say what did not come in time. */
static int
timed_out(struct redis *r, struct err *e)
{
	char	d[32];

	if (r->pending && r->redirects > 0 && now_mono_ms() >= r->req_deadline)
		return cluster_redirected_out(r, e);
	if (r->pending && r->tried != 0 && now_mono_ms() >= r->req_deadline) {
		/* Other doors tried first: this one had only what was left. */
		err_set(e, ERR_TIMEOUT, "no answer before the request's "
		    "deadline, %s after its start (--connect-timeout + "
		    "--timeout)", duration_format(r->req_budget, d, sizeof d));
		return redis_fail(r, e, r->state != READY || handshaking(r));
	}
	switch (r->state) {
	case RESOLVING:
		sentinel_summary(r, e);
		return redis_fail(r, e, 1);
	case CONNECTING:
		transport_timed_out(r->t, r->opts->connect_timeout_ms, e);
		return redis_fail(r, e, 1);
	default:
		break;
	}
	if (handshaking(r) && r->connect_deadline <= r->deadline) {
		err_set(e, ERR_TIMEOUT, "no answer within %s "
		    "(--connect-timeout)", duration_format(
		    r->opts->connect_timeout_ms, d, sizeof d));
		return redis_fail(r, e, 1);
	}
	err_set(e, ERR_TIMEOUT, "no reply within %s (--timeout)",
	    duration_format(r->opts->timeout_ms, d, sizeof d));
	return redis_fail(r, e, 0);
}

static int
step(struct redis *r, struct err *e)
{
	int	rc;

	switch (r->state) {
	case IDLE:
		err_set(e, ERR_SOFTWARE, "no connection");
		return -1;
	case RESOLVING:
		if ((rc = sentinel_step(r, e)) == -1) {
			if (e->kind != ERR_INTERRUPTED)
				err_prefix(e, "%s", r->orig->display);
			r->connect_failed = 1;
			redis_abandon(r);
			return -1;
		}
		if (rc == 0)
			break;
		/* FALLTHROUGH */
	case CONNECTING:
		if ((rc = transport_step(r->t, e)) == -1) {
			/* The master a sentinel named: what do the others say? */
			if (r->check_role && r->door < 0 &&
			    (e->kind == ERR_REFUSED || e->kind == ERR_TIMEOUT ||
			    e->kind == ERR_UNAVAILABLE) &&
			    sentinel_refused(r, e) == 0)
				return step(r, e);
			return redis_fail(r, e, 1);
		}
		if (rc == 0)
			break;
		r->state = READY;
		if (!r->pending)
			return 0;
		if (queue_request(r, e) == -1)
			return redis_fail(r, e, 0);
		/* FALLTHROUGH */
	case READY:
		if (!r->pending)
			return 0;
		if (r->retry_at > 0 && now_mono_ms() >= r->retry_at &&
		    r->ndue == 0) {
			/* After TRYAGAIN: again, by the same deadline. */
			int64_t	deadline = r->deadline;

			r->retry_at = 0;
			if (queue_body(r, e) == -1)
				return redis_fail(r, e, 0);
			r->deadline = deadline;
		}
		if ((rc = step_ready(r, e)) != 0)
			return rc;
		break;
	}
	if (now_mono_ms() >= redis_deadline(r))
		return timed_out(r, e);
	return 0;
}

int
redis_step(struct redis *r, struct err *e)
{
	if (!r->pending) {
		err_set(e, ERR_SOFTWARE, "no request in flight");
		return -1;
	}
	return step(r, e);
}

/* The error code (its first word) of a BLPOP's error reply. */
static void
note_wait_error(struct redis *r, const struct redis_reply *rr)
{
	size_t	n = rr->str != NULL ? strcspn(rr->str, " \r\n") : 0;

	if ((n == 5 && strncmp(rr->str, "MOVED", 5) == 0) ||
	    (n == 3 && strncmp(rr->str, "ASK", 3) == 0))
		return;
	if (n == 0 || n >= sizeof r->wait_err)
		snprintf(r->wait_err, sizeof r->wait_err, "ERR");
	else {
		memcpy(r->wait_err, rr->str, n);
		r->wait_err[n] = '\0';
	}
}

const char *
redis_wait_error(const struct redis *r)
{
	return r->wait_err[0] != '\0' ? r->wait_err : NULL;
}

int
redis_wait_popped(const struct redis *r)
{
	return r->popped;
}

int
redis_wait_unanswered(const struct redis *r)
{
	int	i;

	if (r->state != READY || !r->pending || r->outoff < r->outlen)
		return 0;
	for (i = 0; i < r->ndue; i++)
		if (r->due[i] == DUE_BLPOP || r->due[i] == DUE_MAIN)
			return 1;
	return 0;
}

/*
 * Whether the request is about the writes of its own connection: WAIT
 * counts the replicas that have every write made on the connection it is
 * sent on.  Sent on another (a reconnection, another door), it has
 * nothing to wait for and "confirms" at once; so it goes on the
 * connection of the request before it, or fails.
 */
int
redis_own_writes(const struct redis_req *q)
{
	return q->script == NULL && q->argc > 0 &&
	    strcasecmp(q->argv[0], "WAIT") == 0;
}


/* The least grace (see redis.h): a round trip on a busy machine. */
#define GRACE_MIN_MS	50

int64_t
redis_grace_ms(const struct redis_opts *o)
{
	return o->timeout_ms / 16 > GRACE_MIN_MS ? o->timeout_ms / 16 :
	    GRACE_MIN_MS;
}

int
redis_start(struct redis *r, const struct redis_req *req, struct err *e)
{
	int64_t	end;

	r->wait_err[0] = '\0';
	r->popped = 0;
	if (r->pending) {
		err_set(e, ERR_SOFTWARE, "request already in flight");
		return -1;
	}
	/* A connection the server (or a proxy) closed while it sat idle. */
	if (r->state == READY && !transport_idle_ok(r->t))
		disconnect(r);
	if (redis_own_writes(req) && (r->state != READY ||
	    r->wrote_gen != r->conn_gen)) {
		err_set(e, ERR_UNAVAILABLE, "%s: the connection closed after "
		    "the write, so WAIT cannot confirm that replicas have it",
		    r->url->display);
		return -1;
	}
	r->req = req;
	r->pending = 1;
	r->connect_failed = 0;	/* says how this request failed, if it does */
	r->hops = 0;
	r->redirects = 0;
	r->ask = 0;
	r->waited = 0;
	r->retry_at = 0;
	r->retry_pause = TRYAGAIN_FIRST_MS;
	redis_reply_free(r->reply);
	r->reply = NULL;
	/*
	 * A Cluster (doors known, or learnt during this request): the
	 * request starts at the node that serves its key's slot, and may
	 * try other doors until req_deadline.  Nothing is sent for it.
	 */
	r->tried = 0;
	r->slot = cluster_request_slot(req);
	r->req_budget = r->opts->connect_timeout_ms + r->opts->timeout_ms +
	    req->extra_ms + (req->wait_key != NULL ? req->wait_ms : 0);
	r->req_deadline = now_mono_ms() + r->req_budget;
	/*
	 * The command's end comes first: the last BLPOP, whose reply is
	 * due at the end, has the grace past it; a request sent after it
	 * (the give-back of a wait that ran out) has the grace alone.
	 */
	if (r->opts->end_ms > 0) {
		end = r->opts->end_ms + redis_grace_ms(r->opts);
		if (end < now_mono_ms() + redis_grace_ms(r->opts))
			end = now_mono_ms() + redis_grace_ms(r->opts);
		if (end < r->req_deadline) {
			r->req_budget -= r->req_deadline - end;
			r->req_deadline = end;
		}
	}
	if (r->ndoors > 0 && r->state != IDLE && r->slot >= 0 &&
	    r->slots[r->slot] >= 0 && r->slots[r->slot] != r->door)
		disconnect(r);
	if (redis_prepare(r, e) == -1)
		return -1;
	if (r->state == READY && queue_request(r, e) == -1)
		return redis_fail(r, e, 0);
	return 0;
}

struct redis_reply *
redis_take(struct redis *r)
{
	struct redis_reply	*rr = r->reply;

	r->reply = NULL;
	return rr;
}

int
redis_pollfds(const struct redis *r, struct pollfd *pfd)
{
	switch (r->state) {
	case IDLE:
		break;
	case RESOLVING:
		return sentinel_pollfds(r, pfd);
	case CONNECTING:
		return transport_pollfds(r->t, POLLOUT, pfd);
	case READY:
		return transport_pollfds(r->t, r->outoff < r->outlen ?
		    POLLIN | POLLOUT : POLLIN, pfd);
	}
	return 0;
}

int64_t
redis_wake(const struct redis *r)
{
	switch (r->state) {
	case RESOLVING:
		return sentinel_wake(r);
	case CONNECTING:
		return transport_wake(r->t);
	case READY:
		return r->retry_at > 0 ? r->retry_at : -1;
	default:
		return -1;
	}
}

void
redis_free(struct redis *r)
{
	if (r == NULL)
		return;
	disconnect(r);
	sentinel_free(r);
	if (r->reader != NULL)
		redisReaderFree(r->reader);
	redis_reply_free(r->reply);
	url_free(&r->target);
	while (r->ndoors > 0) {
		url_free(r->doors[--r->ndoors]);
		free(r->doors[r->ndoors]);
	}
	free(r->doors);
	free(r->slots);
	free(r);
}

