/* redis.c: one Redis connection: commands with deadlines, scripts, AUTH, SELECT. */

/*
 * hiredis is used for exactly two things that every version has: the
 * RESP reader (redisReader) and the command formatter
 * (redisFormatCommandArgv).  Sockets and deadlines belong to transport.c.
 * A connection carries at most one request in flight; quorum.c gets its
 * parallelism from one connection per server, not from pipelining.  Any
 * I/O failure or timeout marks the connection broken: a late reply to an
 * abandoned request must never be taken for the answer to the next one.
 *
 * Where the server is depends on the URL: a sentinel URL is resolved to
 * the current master on every (re)connect, and a Cluster node's MOVED or
 * ASK reply moves the connection to the node named, where the request is
 * sent again.  The layers above see one connection that answers.
 */

#include <hiredis/hiredis.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "redis.h"
#include "transport.h"
#include "util.h"

/* How often one request may be redirected (MOVED/ASK) before giving up. */
#define MAX_REDIRECTS	5

struct redis {
	const struct url	*orig;	/* as configured */
	const struct url	*url;	/* where we are: orig or &target */
	struct url		 target; /* a sentinel's master, a MOVED node */
	const struct redis_opts	*opts;
	struct transport	*t;
	redisReader		*reader;
	int			 broken;

	/* The request in flight, formatted, to send again if redirected. */
	int			 pending;
	int			 waiting;	/* a BLPOP's reply comes first */
	int			 hs[3];	/* handshake replies due: HS_* */
	char			 run_id[41]; /* the server's, once identified */
	char			*pre;		/* sent with it, once: the BLPOP */
	size_t			 prelen;
	char			*req;
	size_t			 reqlen;
	int64_t			 deadline;
	int64_t			 budget;	/* for "no reply within" */
	struct script		*script;	/* EVALSHA to retry as EVAL */
	int			 nkeys, nargs;
	const char		**keys, **args;
};

/* The handshake's commands, in the order they are sent. */
enum { HS_AUTH, HS_SELECT, HS_INFO };

static int	attach(struct redis *, const struct url *, int64_t,
		    struct err *);
static int	handshake_recv(struct redis *, const struct url *, int64_t,
		    struct err *);
static void	connect_error(const struct url *, struct err *);

static int
handshaking(const struct redis *r)
{
	return r->hs[HS_AUTH] || r->hs[HS_SELECT] || r->hs[HS_INFO];
}

const char *
redis_run_id(const struct redis *r)
{
	return r->run_id;
}

static struct redis_reply *
convert(const redisReply *r)
{
	struct redis_reply	*rr = xcalloc(1, sizeof *rr);
	size_t			 i;

	switch (r->type) {
	case REDIS_REPLY_STRING:
		rr->type = REDIS_T_STRING;
		break;
	case REDIS_REPLY_STATUS:
		rr->type = REDIS_T_STATUS;
		break;
	case REDIS_REPLY_ERROR:
		rr->type = REDIS_T_ERROR;
		break;
	case REDIS_REPLY_INTEGER:
		rr->type = REDIS_T_INTEGER;
		rr->integer = r->integer;
		return rr;
	case REDIS_REPLY_ARRAY:
		rr->type = REDIS_T_ARRAY;
		rr->elements = r->elements;
		rr->element = xcalloc(r->elements ? r->elements : 1,
		    sizeof *rr->element);
		for (i = 0; i < r->elements; i++)
			rr->element[i] = convert(r->element[i]);
		return rr;
	default:
		rr->type = REDIS_T_NIL;
		return rr;
	}
	rr->str = xstrndup(r->str, r->len);
	rr->len = r->len;
	return rr;
}

void
redis_reply_free(struct redis_reply *rr)
{
	size_t	i;

	if (rr == NULL)
		return;
	for (i = 0; i < rr->elements; i++)
		redis_reply_free(rr->element[i]);
	free(rr->element);
	free(rr->str);
	free(rr);
}

struct redis_reply *
redis_parse(const char *buf, size_t len)
{
	redisReader		*rd;
	redisReply		*reply = NULL;
	struct redis_reply	*rr = NULL;

	if ((rd = redisReaderCreate()) == NULL)
		return NULL;
	if (redisReaderFeed(rd, buf, len) == REDIS_OK &&
	    redisReaderGetReply(rd, (void **)&reply) == REDIS_OK &&
	    reply != NULL) {
		rr = convert(reply);
		freeReplyObject(reply);
	}
	redisReaderFree(rd);
	return rr;
}

const char *
redis_display(const struct redis *r)
{
	return r->url->display;
}

int
redis_broken(const struct redis *r)
{
	/*
	 * Replies due (a request, a handshake) are not a closed connection,
	 * nor is a connect under way.
	 */
	return r->broken || (!r->pending && !handshaking(r) &&
	    !r->t->connecting && !transport_idle_ok(r->t));
}

void
redis_abandon(struct redis *r)
{
	r->broken = 1;
	r->pending = 0;
}

int
redis_fd(const struct redis *r)
{
	return r->t != NULL ? r->t->fd : -1;
}

int64_t
redis_deadline(const struct redis *r)
{
	return r->deadline;
}

static int
fail(struct redis *r, struct err *e)
{
	r->broken = 1;
	r->pending = 0;
	r->waiting = 0;
	if (e->kind != ERR_INTERRUPTED)
		err_prefix(e, "%s", r->url->display);
	return -1;
}

/* ------------------------------------------------------ sending, reading */

/* Format argv as the request in flight (kept for a redirect) and send it. */
static int
send_argv(struct redis *r, int argc, const char **argv, const size_t *argvlen,
    struct err *e)
{
	char	*cmd;
	int	 len;

	len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
	if (len < 0) {
		err_set(e, ERR_SOFTWARE, "cannot format a Redis command");
		return -1;
	}
	free(r->req);
	r->req = cmd;
	r->reqlen = (size_t)len;
	if (r->pre == NULL)
		return transport_write(r->t, r->req, r->reqlen, r->deadline, e);
	/* One write, so that the server finds both in one read. */
	cmd = xmalloc(r->prelen + r->reqlen);
	memcpy(cmd, r->pre, r->prelen);
	memcpy(cmd + r->prelen, r->req, r->reqlen);
	free(r->pre);
	r->pre = NULL;
	len = transport_write(r->t, cmd, r->prelen + r->reqlen, r->deadline, e);
	free(cmd);
	return len;
}

static int
read_reply(struct redis *r, struct redis_reply **out, struct err *e)
{
	redisReply	*reply = NULL;
	char		 buf[16384], d[32];
	ssize_t		 n;

	for (;;) {
		if (redisReaderGetReply(r->reader, (void **)&reply) != REDIS_OK) {
			err_set(e, ERR_UNAVAILABLE, "protocol error: %s",
			    r->reader->errstr);
			return -1;
		}
		if (reply != NULL)
			break;
		n = transport_read(r->t, buf, sizeof buf, r->deadline, e);
		if (n == 0) {
			err_set(e, ERR_UNAVAILABLE,
			    "connection closed by the server");
			return -1;
		}
		if (n < 0) {
			if (e->kind == ERR_UNAVAILABLE &&
			    strcmp(e->msg, "timed out") == 0)
				err_set(e, ERR_UNAVAILABLE,
				    "no reply within %s (--timeout)",
				    duration_format(r->budget, d, sizeof d));
			return -1;
		}
		redisReaderFeed(r->reader, buf, n);
	}
	*out = convert(reply);
	freeReplyObject(reply);
	return 0;
}

/*
 * One command outside the request-in-flight bookkeeping (handshakes,
 * ASKING), bounded by deadline.  An error reply is returned as a reply.
 */
static struct redis_reply *
roundtrip(struct redis *r, int64_t deadline, struct err *e, ...)
{
	struct redis_reply	*rr;
	const char		*argv[8];
	char			*cmd;
	int64_t			 saved = r->deadline;
	int			 argc = 0, len, rc;
	va_list			 ap;

	va_start(ap, e);
	while (argc < 8 && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	if ((len = redisFormatCommandArgv(&cmd, argc, argv, NULL)) < 0) {
		err_set(e, ERR_SOFTWARE, "cannot format a Redis command");
		return NULL;
	}
	rc = transport_write(r->t, cmd, len, deadline, e);
	free(cmd);
	if (rc == -1)
		return NULL;
	r->deadline = deadline;
	rc = read_reply(r, &rr, e);
	r->deadline = saved;
	return rc == -1 ? NULL : rr;
}

int
redis_send(struct redis *r, int argc, const char **argv, const size_t *argvlen,
    int64_t extra_ms, struct err *e)
{
	if (r->broken) {
		err_set(e, ERR_UNAVAILABLE, "%s: connection lost",
		    r->url->display);
		return -1;
	}
	if (r->pending) {
		err_set(e, ERR_SOFTWARE, "request already in flight");
		return -1;
	}
	r->budget = r->opts->timeout_ms;
	r->deadline = now_mono_ms() + r->budget + extra_ms;
	r->script = NULL;
	if (send_argv(r, argc, argv, argvlen, e) == -1)
		return fail(r, e);
	r->pending = 1;
	return 0;
}

static int
send_eval(struct redis *r, int use_sha, struct err *e)
{
	const char	**argv;
	char		  nk[16];
	int		  argc = 3 + r->nkeys + r->nargs, i, rc;

	argv = xcalloc(argc, sizeof *argv);
	argv[0] = use_sha ? "EVALSHA" : "EVAL";
	argv[1] = use_sha ? r->script->sha : r->script->body;
	snprintf(nk, sizeof nk, "%d", r->nkeys);
	argv[2] = nk;
	for (i = 0; i < r->nkeys; i++)
		argv[3 + i] = r->keys[i];
	for (i = 0; i < r->nargs; i++)
		argv[3 + r->nkeys + i] = r->args[i];
	rc = send_argv(r, argc, argv, NULL, e);
	free(argv);
	return rc;
}

int
redis_send_script(struct redis *r, struct script *s, int nkeys,
    const char **keys, int nargs, const char **args, struct err *e)
{
	return redis_send_wait_script(r, NULL, 0, s, nkeys, keys, nargs, args,
	    e);
}

void
redis_timeout_arg(char *buf, size_t len, int64_t ms)
{
	if (ms < 1)
		ms = 1;		/* a timeout of 0 blocks forever */
	snprintf(buf, len, "%lld.%03lld", (long long)(ms / 1000),
	    (long long)(ms % 1000));
}

int
redis_send_wait_script(struct redis *r, const char *wait_key,
    int64_t wait_ms, struct script *s, int nkeys, const char **keys,
    int nargs, const char **args, struct err *e)
{
	const char	*argv[3];
	char		 secs[32], *cmd;
	int		 len;

	if (r->broken) {
		err_set(e, ERR_UNAVAILABLE, "%s: connection lost",
		    r->url->display);
		return -1;
	}
	if (r->pending) {
		err_set(e, ERR_SOFTWARE, "request already in flight");
		return -1;
	}
	r->budget = r->opts->timeout_ms;
	r->deadline = now_mono_ms() + r->budget;
	r->script = s;
	r->nkeys = nkeys;
	r->keys = keys;
	r->nargs = nargs;
	r->args = args;
	if (wait_key != NULL) {
		redis_timeout_arg(secs, sizeof secs, wait_ms);
		argv[0] = "BLPOP";
		argv[1] = wait_key;
		argv[2] = secs;
		if ((len = redisFormatCommandArgv(&cmd, 3, argv, NULL)) < 0) {
			err_set(e, ERR_SOFTWARE,
			    "cannot format a Redis command");
			return -1;
		}
		r->pre = cmd;
		r->prelen = (size_t)len;
		r->deadline += wait_ms < 1 ? 1 : wait_ms;
		r->waiting = 1;
	}
	if (send_eval(r, 1, e) == -1) {
		free(r->pre);
		r->pre = NULL;
		return fail(r, e);
	}
	r->pending = 1;
	return 0;
}

/*
 * "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381": move to that
 * node (same credentials and TLS) and send the request there again; an
 * ASK redirection is for this one request and wants ASKING first.
 * 0 when resent, -1 on failure.
 */
static int
redirect(struct redis *r, const char *text, struct err *e)
{
	struct redis_reply	*rr;
	struct transport	*old = r->t;
	struct url		 to;
	const char		*addr, *colon;
	char			*host;
	int			 ask = strncmp(text, "ASK ", 4) == 0, rc;

	/* Past the word and the slot number. */
	if ((addr = strchr(text, ' ')) == NULL ||
	    (addr = strchr(addr + 1, ' ')) == NULL ||
	    (colon = strrchr(++addr, ':')) == NULL || colon == addr) {
		err_set(e, ERR_UNAVAILABLE, "bad redirection: %s", text);
		return -1;
	}
	host = xstrndup(addr, (size_t)(colon - addr));
	url_retarget(&to, r->orig->scheme == URL_SENTINEL ? r->url : r->orig,
	    host, atoi(colon + 1));
	free(host);
	/* Cluster has only db 0: a SELECT there would fail. */
	to.db = -1;
	r->t = NULL;
	rc = attach(r, &to, r->deadline, e);
	if (rc == -1) {
		r->t = old;
		url_free(&to);
		return -1;
	}
	transport_close(old);
	url_free(&r->target);
	r->target = to;
	r->url = &r->target;
	if (ask) {
		if ((rr = roundtrip(r, r->deadline, e, "ASKING", NULL)) == NULL)
			return -1;
		redis_reply_free(rr);
	}
	return transport_write(r->t, r->req, r->reqlen, r->deadline, e);
}

int
redis_recv(struct redis *r, struct redis_reply **out, struct err *e)
{
	struct redis_reply	*rr;
	int			 hops = 0;

	*out = NULL;
	if (!r->pending) {
		err_set(e, ERR_SOFTWARE, "no request in flight");
		return -1;
	}
	/* A connection made in steps: its AUTH and SELECT replies first. */
	if (handshaking(r) &&
	    handshake_recv(r, r->url, r->deadline, e) == -1) {
		r->broken = 1;
		r->pending = r->waiting = 0;
		if (strncmp(e->msg, r->url->display,
		    strlen(r->url->display)) != 0)
			connect_error(r->url, e);
		return -1;
	}
	if (r->waiting) {
		/*
		 * Popped or timed out, the script ran right after it: its
		 * reply is the one that counts, a round trip from now.
		 */
		if (read_reply(r, &rr, e) == -1)
			return fail(r, e);
		redis_reply_free(rr);
		r->waiting = 0;
		r->deadline = now_mono_ms() + r->budget;
	}
	for (;;) {
		if (read_reply(r, &rr, e) == -1)
			return fail(r, e);
		if (rr->type != REDIS_T_ERROR)
			break;
		/*
		 * The script cache is empty after a restart, a failover or
		 * SCRIPT FLUSH: send the body once, which also loads it.
		 */
		if (r->script != NULL && strncmp(rr->str, "NOSCRIPT", 8) == 0) {
			redis_reply_free(rr);
			/*
			 * A new request, with a round trip of its own: the
			 * quorum may have spent the first one waiting on a
			 * frozen server before it read this reply.
			 */
			r->deadline = now_mono_ms() + r->budget;
			if (send_eval(r, 0, e) == -1)
				return fail(r, e);
			continue;
		}
		if ((strncmp(rr->str, "MOVED ", 6) == 0 ||
		    strncmp(rr->str, "ASK ", 4) == 0) &&
		    hops++ < MAX_REDIRECTS) {
			r->deadline = now_mono_ms() + r->budget;
			if (redirect(r, rr->str, e) == -1) {
				redis_reply_free(rr);
				return fail(r, e);
			}
			redis_reply_free(rr);
			continue;
		}
		break;
	}
	r->pending = 0;
	*out = rr;
	return 0;
}

/*
 * An error reply as a message: "URL: TEXT".  Servers do not echo the
 * password back, but a message is only ever printed, so make sure.
 */
void
redis_reply_error(struct redis *r, const struct redis_reply *rr, const char *what,
    struct err *e)
{
	const char	*pw = r->url->password ? r->url->password :
			    r->opts->password;
	char		 text[256], *p;
	size_t		 n;

	snprintf(text, sizeof text, "%s", rr->str);
	if (pw != NULL && (n = strlen(pw)) > 0)
		while ((p = strstr(text, pw)) != NULL) {
			memmove(p + 3, p + n, strlen(p + n) + 1);
			memcpy(p, "***", 3);
		}
	err_set(e, ERR_UNAVAILABLE, "%s: %s%s", r->url->display, what, text);
	if (strncmp(text, "NOAUTH", 6) == 0)
		err_set(e, ERR_UNAVAILABLE, "%s: %s%s (give the password with "
		    "--password-file, RLOCK_PASSWORD or the URL)",
		    r->url->display, what, text);
}

struct redis_reply *
redis_command(struct redis *r, struct err *e, int argc, const char **argv,
    const size_t *argvlen)
{
	struct redis_reply	*rr;

	if (redis_send(r, argc, argv, argvlen, 0, e) == -1 ||
	    redis_recv(r, &rr, e) == -1)
		return NULL;
	if (rr->type == REDIS_T_ERROR) {
		redis_reply_error(r, rr, "", e);
		redis_reply_free(rr);
		return NULL;
	}
	return rr;
}

struct redis_reply *
redis_commandv(struct redis *r, struct err *e, ...)
{
	const char	*argv[16];
	int		 argc = 0;
	va_list		 ap;

	va_start(ap, e);
	while (argc < 16 && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	return redis_command(r, e, argc, argv, NULL);
}

/* ------------------------------------------------------------ connecting */

/*
 * AUTH, SELECT and, to tell servers apart in a quorum, INFO server, on r's
 * fresh transport, sent in one write (a password error then fails the
 * others too, but their replies are never read).
 */
static int
handshake_send(struct redis *r, const struct url *u, int64_t deadline,
    struct err *e)
{
	const char	*password = u->password ? u->password :
			    r->opts->password;
	const char	*argv[3];
	char		*cmd[3] = { NULL, NULL, NULL }, *buf, db[16];
	int		 len[3] = { 0, 0, 0 }, argc = 0, i, rc = 0;
	size_t		 total = 0;

	r->hs[HS_AUTH] = password != NULL;
	r->hs[HS_SELECT] = u->db > 0;
	r->hs[HS_INFO] = r->opts->identify;
	if (r->hs[HS_AUTH]) {
		argv[argc++] = "AUTH";
		if (u->user != NULL)
			argv[argc++] = u->user;
		argv[argc++] = password;
		len[HS_AUTH] = redisFormatCommandArgv(&cmd[HS_AUTH], argc,
		    argv, NULL);
	}
	if (r->hs[HS_SELECT]) {
		snprintf(db, sizeof db, "%d", u->db);
		argv[0] = "SELECT";
		argv[1] = db;
		len[HS_SELECT] = redisFormatCommandArgv(&cmd[HS_SELECT], 2,
		    argv, NULL);
	}
	if (r->hs[HS_INFO]) {
		argv[0] = "INFO";
		argv[1] = "server";
		len[HS_INFO] = redisFormatCommandArgv(&cmd[HS_INFO], 2, argv,
		    NULL);
	}
	for (i = 0; i < 3; i++) {
		if (len[i] < 0)
			rc = -1;
		else
			total += (size_t)len[i];
	}
	if (rc == 0 && total > 0) {
		buf = xmalloc(total);
		for (total = 0, i = 0; i < 3; i++) {
			if (len[i] > 0)
				memcpy(buf + total, cmd[i], len[i]);
			total += (size_t)len[i];
		}
		rc = transport_write(r->t, buf, total, deadline, e);
		/* The password was in there: leave it in no freed memory. */
		explicit_bzero(buf, total);
		free(buf);
	} else if (rc == -1)
		err_set(e, ERR_SOFTWARE, "cannot format a Redis command");
	if (cmd[HS_AUTH] != NULL)
		explicit_bzero(cmd[HS_AUTH], len[HS_AUTH]);
	for (i = 0; i < 3; i++)
		free(cmd[i]);
	return rc;
}

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

/* Read what handshake_send asked. */
static int
handshake_recv(struct redis *r, const struct url *u, int64_t deadline,
    struct err *e)
{
	static const char *const what[3] = {
		[HS_AUTH] = "authentication failed: ",
		[HS_SELECT] = "SELECT failed: ",
		[HS_INFO] = "INFO failed (a quorum needs it to tell servers "
		    "apart): ",
	};
	struct redis_reply	*rr;
	const struct url	*was = r->url;
	int64_t			 saved = r->deadline;
	int			 i, rc = 0;

	r->url = u;	/* for redis_reply_error's message */
	r->deadline = deadline;
	for (i = 0; i < 3 && rc == 0; i++) {
		if (!r->hs[i])
			continue;
		if (read_reply(r, &rr, e) == -1) {
			rc = -1;
			break;
		}
		if (rr->type == REDIS_T_ERROR) {
			redis_reply_error(r, rr, what[i], e);
			rc = -1;
		} else if (i == HS_INFO)
			note_run_id(r, rr);
		redis_reply_free(rr);
	}
	r->hs[HS_AUTH] = r->hs[HS_SELECT] = r->hs[HS_INFO] = 0;
	r->deadline = saved;
	r->url = was;
	return rc;
}

/* A failed connect's message names the server. */
static void
connect_error(const struct url *u, struct err *e)
{
	/* A bad certificate file is the user's to fix, not the net's. */
	if (e->kind != ERR_INTERRUPTED && e->kind != ERR_USAGE)
		err_prefix(e, "cannot connect to %s", u->display);
}

static int
new_reader(struct redis *r, struct err *e)
{
	if (r->reader != NULL)
		redisReaderFree(r->reader);
	if ((r->reader = redisReaderCreate()) == NULL) {
		err_set(e, ERR_SOFTWARE, "out of memory");
		return -1;
	}
	return 0;
}

/* Connect r to u and authenticate, within deadline; r->t is replaced. */
static int
attach(struct redis *r, const struct url *u, int64_t deadline, struct err *e)
{
	if (new_reader(r, e) == -1)
		return -1;
	if ((r->t = transport_connect(u, r->opts->tls, deadline, e)) == NULL) {
		connect_error(u, e);
		return -1;
	}
	if (handshake_send(r, u, deadline, e) == -1 ||
	    handshake_recv(r, u, deadline, e) == -1) {
		transport_close(r->t);
		r->t = NULL;
		return -1;
	}
	return 0;
}

/*
 * Ask the sentinels, in order, where the master is, and check that it
 * says it is one (during a failover a sentinel can name a node that is
 * not master yet).  Sentinels are asked without a password unless they
 * demand one.  0 with r attached to the master, or -1.
 */
static int
attach_sentinel(struct redis *r, const struct url *u, int64_t deadline,
    struct err *e)
{
	struct redis_opts	 sopts = *r->opts;
	struct redis		 s;
	struct redis_reply	*rr = NULL;
	struct url		 su, master;
	int			 i, ok;

	sopts.password = NULL;
	sopts.tls = NULL;
	sopts.identify = 0;	/* the master is identified, not a sentinel */
	for (i = 0; i < u->nsentinels; i++) {
		memset(&s, 0, sizeof s);
		s.opts = &sopts;
		url_retarget(&su, u, u->sentinels[i].host,
		    u->sentinels[i].port);
		su.scheme = URL_TCP;
		free(su.password);
		su.password = NULL;
		su.db = -1;
		s.orig = s.url = &su;
		ok = attach(&s, &su, deadline, e) == 0;
		if (ok) {
			rr = roundtrip(&s, deadline, e, "SENTINEL",
			    "GET-MASTER-ADDR-BY-NAME", u->master, NULL);
			if (rr != NULL && rr->type == REDIS_T_ERROR &&
			    strncmp(rr->str, "NOAUTH", 6) == 0 &&
			    (u->password || r->opts->password)) {
				redis_reply_free(rr);
				rr = roundtrip(&s, deadline, e, "AUTH",
				    u->password ? u->password :
				    r->opts->password, NULL);
				redis_reply_free(rr);
				rr = roundtrip(&s, deadline, e, "SENTINEL",
				    "GET-MASTER-ADDR-BY-NAME", u->master,
				    NULL);
			}
		}
		transport_close(s.t);
		if (s.reader != NULL)
			redisReaderFree(s.reader);
		if (ok && rr != NULL && rr->type == REDIS_T_ARRAY &&
		    rr->elements == 2 &&
		    rr->element[0]->type == REDIS_T_STRING) {
			url_retarget(&master, u, rr->element[0]->str,
			    atoi(rr->element[1]->str ? rr->element[1]->str :
			    "0"));
			redis_reply_free(rr);
			url_free(&su);
			goto found;
		}
		if (ok && rr != NULL)
			err_set(e, ERR_UNAVAILABLE, "sentinel %s does not know "
			    "master '%s'%s%s", su.display, u->master,
			    rr->type == REDIS_T_ERROR ? ": " : "",
			    rr->type == REDIS_T_ERROR ? rr->str : "");
		redis_reply_free(rr);
		rr = NULL;
		url_free(&su);
	}
	err_prefix(e, "%s", u->display);
	return -1;

found:
	if (attach(r, &master, deadline, e) == -1) {
		url_free(&master);
		return -1;
	}
	url_free(&r->target);
	r->target = master;
	r->url = &r->target;
	rr = roundtrip(r, deadline, e, "ROLE", NULL);
	ok = rr != NULL && rr->type == REDIS_T_ARRAY && rr->elements > 0 &&
	    rr->element[0]->type == REDIS_T_STRING &&
	    strcmp(rr->element[0]->str, "master") == 0;
	redis_reply_free(rr);
	if (!ok) {
		err_set(e, ERR_UNAVAILABLE, "%s: the sentinels name %s as "
		    "master '%s', but it is not a master (a failover may be "
		    "under way; try again)", u->display, r->url->display,
		    u->master);
		return -1;
	}
	return 0;
}

static struct redis *
new_redis(const struct url *u, const struct redis_opts *opts)
{
	struct redis	*r = xcalloc(1, sizeof *r);

	r->orig = r->url = u;
	r->opts = opts;
	r->budget = opts->connect_timeout_ms;
	r->deadline = now_mono_ms() + opts->connect_timeout_ms;
	return r;
}

/* A handshake that got no reply ran out of the connect timeout. */
static void
handshake_error(const struct url *u, const struct redis_opts *opts,
    struct err *e)
{
	char	d[32];

	if (strstr(e->msg, "no reply within") != NULL)
		err_set(e, ERR_UNAVAILABLE, "cannot connect to %s: no answer "
		    "within %s (--connect-timeout)", u->display,
		    duration_format(opts->connect_timeout_ms, d, sizeof d));
}

struct redis *
redis_connect(const struct url *u, const struct redis_opts *opts,
    struct err *e)
{
	struct redis	*r = new_redis(u, opts);
	int		 rc;

	if (u->scheme == URL_SENTINEL)
		rc = attach_sentinel(r, u, r->deadline, e);
	else
		rc = attach(r, u, r->deadline, e);
	if (rc == -1) {
		handshake_error(u, opts, e);
		redis_close(r);
		return NULL;
	}
	return r;
}

struct redis *
redis_connect_start(const struct url *u, const struct redis_opts *opts,
    struct err *e)
{
	struct redis	*r = new_redis(u, opts);

	if (new_reader(r, e) == -1 ||
	    (r->t = transport_start(u, r->deadline, e)) == NULL) {
		connect_error(u, e);
		redis_close(r);
		return NULL;
	}
	return r;
}

int
redis_connected(const struct redis *r)
{
	return transport_connected(r->t);
}

int
redis_connecting(const struct redis *r)
{
	return r->t != NULL && r->t->connecting;
}

int
redis_connect_send(struct redis *r, struct err *e)
{
	if (transport_finish(r->t, r->url, r->opts->tls, r->deadline,
	    e) == -1) {
		connect_error(r->url, e);
		return -1;
	}
	if (handshake_send(r, r->url, r->deadline, e) == -1) {
		handshake_error(r->url, r->opts, e);
		return -1;
	}
	return 0;
}

int
redis_connect_end(struct redis *r, struct err *e)
{
	if (handshake_recv(r, r->url, r->deadline, e) == -1) {
		handshake_error(r->url, r->opts, e);
		return -1;
	}
	return 0;
}

void
redis_close(struct redis *r)
{
	if (r == NULL)
		return;
	transport_close(r->t);
	if (r->reader != NULL)
		redisReaderFree(r->reader);
	url_free(&r->target);
	free(r->req);
	free(r->pre);
	free(r);
}
