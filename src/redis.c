/* redis.c: one Redis connection: commands with deadlines, scripts, AUTH, SELECT. */

/*
 * hiredis is used for exactly two things that every version has: the
 * RESP reader (redisReader) and the command formatter
 * (redisFormatCommandArgv).  Sockets and deadlines belong to transport.c.
 * A connection carries at most one request in flight; quorum.c gets its
 * parallelism from one connection per server, not from pipelining.  Any
 * I/O failure or timeout marks the connection broken: a late reply to an
 * abandoned request must never be taken for the answer to the next one.
 */

#include <openssl/sha.h>
#include <hiredis/hiredis.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "redis.h"
#include "transport.h"
#include "util.h"

struct redis {
	const struct url	*url;
	const struct redis_opts	*opts;
	struct transport	*t;
	redisReader		*reader;
	int			 broken;

	/* The request in flight. */
	int			 pending;
	int64_t			 deadline;
	int64_t			 budget;	/* for "timed out after" */
	struct script		*script;	/* EVALSHA to retry as EVAL */
	int			 nkeys, nargs;
	const char		**keys, **args;
};

static pthread_once_t	hash_once = PTHREAD_ONCE_INIT;

/* EVALSHA needs each body's SHA1; the scripts are constant, hash them once. */
static void
hash_scripts(void)
{
	unsigned char	 md[SHA_DIGEST_LENGTH];
	struct script	**s;
	int		 i;

	for (s = scripts_all; *s != NULL; s++) {
		SHA1((const unsigned char *)(*s)->body, strlen((*s)->body), md);
		for (i = 0; i < SHA_DIGEST_LENGTH; i++)
			sprintf((*s)->sha + 2 * i, "%02x", md[i]);
	}
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

const char *
redis_display(const struct redis *r)
{
	return r->url->display;
}

int
redis_broken(const struct redis *r)
{
	return r->broken || (!r->pending && !transport_idle_ok(r->t));
}

static int
fail(struct redis *r, struct err *e)
{
	r->broken = 1;
	r->pending = 0;
	if (e->kind != ERR_INTERRUPTED)
		err_prefix(e, "%s", r->url->display);
	return -1;
}

static int
send_argv(struct redis *r, int argc, const char **argv, const size_t *argvlen,
    struct err *e)
{
	char	*cmd;
	int	 len, rc;

	len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
	if (len < 0) {
		err_set(e, ERR_SOFTWARE, "cannot format a Redis command");
		return -1;
	}
	rc = transport_write(r->t, cmd, len, r->deadline, e);
	free(cmd);
	return rc;
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
	if (r->broken) {
		err_set(e, ERR_UNAVAILABLE, "%s: connection lost",
		    r->url->display);
		return -1;
	}
	pthread_once(&hash_once, hash_scripts);
	r->budget = r->opts->timeout_ms;
	r->deadline = now_mono_ms() + r->budget;
	r->script = s;
	r->nkeys = nkeys;
	r->keys = keys;
	r->nargs = nargs;
	r->args = args;
	if (send_eval(r, 1, e) == -1)
		return fail(r, e);
	r->pending = 1;
	return 0;
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

int
redis_recv(struct redis *r, struct redis_reply **out, struct err *e)
{
	struct redis_reply	*rr;

	*out = NULL;
	if (!r->pending) {
		err_set(e, ERR_SOFTWARE, "no request in flight");
		return -1;
	}
	if (read_reply(r, &rr, e) == -1)
		return fail(r, e);
	/*
	 * The script cache is empty after a restart, a failover or SCRIPT
	 * FLUSH: send the body once, which also loads it for next time.
	 */
	if (r->script != NULL && rr->type == REDIS_T_ERROR &&
	    strncmp(rr->str, "NOSCRIPT", 8) == 0) {
		redis_reply_free(rr);
		if (send_eval(r, 0, e) == -1 || read_reply(r, &rr, e) == -1)
			return fail(r, e);
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

/* AUTH and SELECT, during the connect budget. */
static int
handshake(struct redis *r, struct err *e)
{
	const struct url	*u = r->url;
	const char		*password = u->password ? u->password :
				    r->opts->password, *argv[3];
	struct redis_reply	*rr;
	char			 db[16];
	int			 argc = 0;

	if (password != NULL) {
		argv[argc++] = "AUTH";
		if (u->user != NULL)
			argv[argc++] = u->user;
		argv[argc++] = password;
		if (redis_send(r, argc, argv, NULL, 0, e) == -1 ||
		    redis_recv(r, &rr, e) == -1)
			return -1;
		if (rr->type == REDIS_T_ERROR) {
			redis_reply_error(r, rr, "authentication failed: ", e);
			redis_reply_free(rr);
			return -1;
		}
		redis_reply_free(rr);
	}
	if (u->db > 0) {
		snprintf(db, sizeof db, "%d", u->db);
		if ((rr = redis_commandv(r, e, "SELECT", db, NULL)) == NULL)
			return -1;
		redis_reply_free(rr);
	}
	return 0;
}

struct redis *
redis_connect(const struct url *u, const struct redis_opts *opts,
    struct err *e)
{
	struct redis		*r;
	struct redis_opts	 hs;
	int64_t			 deadline;
	char			 d[32];

	deadline = now_mono_ms() + opts->connect_timeout_ms;
	r = xcalloc(1, sizeof *r);
	r->url = u;
	r->opts = opts;
	if ((r->reader = redisReaderCreate()) == NULL) {
		free(r);
		err_set(e, ERR_SOFTWARE, "out of memory");
		return NULL;
	}
	r->t = transport_connect(u, deadline, e);
	if (r->t == NULL) {
		if (e->kind != ERR_INTERRUPTED)
			err_prefix(e, "cannot connect to %s", u->display);
		goto fail;
	}
	/* The handshake round trips count against the connect timeout. */
	hs = *opts;
	hs.timeout_ms = deadline - now_mono_ms();
	if (hs.timeout_ms < 1)
		hs.timeout_ms = 1;
	r->opts = &hs;
	if (handshake(r, e) == -1) {
		if (strstr(e->msg, "no reply within") != NULL)
			err_set(e, ERR_UNAVAILABLE, "cannot connect to %s: "
			    "no answer within %s (--connect-timeout)",
			    u->display, duration_format(
			    opts->connect_timeout_ms, d, sizeof d));
		goto fail;
	}
	r->opts = opts;
	return r;

fail:
	redis_close(r);
	return NULL;
}

void
redis_close(struct redis *r)
{
	if (r == NULL)
		return;
	transport_close(r->t);
	if (r->reader != NULL)
		redisReaderFree(r->reader);
	free(r);
}
