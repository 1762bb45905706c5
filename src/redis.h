/* redis.h: one connection to one Redis server, speaking RESP2. */
#ifndef RLOCK_REDIS_H
#define RLOCK_REDIS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "scripts.h"
#include "transport.h"
#include "url.h"

enum redis_type {
	REDIS_T_STRING = 1,
	REDIS_T_ARRAY,
	REDIS_T_INTEGER,
	REDIS_T_NIL,
	REDIS_T_STATUS,
	REDIS_T_ERROR,
};

/* A reply, in rlock's own type so that nothing above sees hiredis. */
struct redis_reply {
	enum redis_type		  type;
	long long		  integer;
	char			 *str;		/* STRING, STATUS, ERROR */
	size_t			  len;
	size_t			  elements;	/* ARRAY */
	struct redis_reply	**element;
};

struct redis_opts {
	int64_t		 connect_timeout_ms;	/* TCP connect + AUTH + SELECT */
	int64_t		 timeout_ms;		/* one round trip */
	const char	*password;		/* when the URL has none */
	const struct tls_opts *tls;		/* for rediss:// */
	int		 identify;	/* learn each server's run_id */
};

struct redis;

/*
 * Connect, AUTH (with the URL's user, if any) and SELECT the URL's db, all
 * within opts->connect_timeout_ms.  Both u and opts must outlive the
 * connection.  NULL with e filled on failure; the message names the URL
 * (never the password) and the reason.
 */
struct redis	*redis_connect(const struct url *u, const struct redis_opts *opts,
		    struct err *e);
/*
 * The same in steps, so that a quorum's connections proceed at once: start
 * every connect, then finish each and send its AUTH and SELECT, then read
 * their replies.  Not for sentinel URLs.  A step that fails leaves e
 * filled as redis_connect would; the caller then closes the connection.
 * The last step may be left out: a request sent right away goes behind
 * the AUTH and SELECT, and redis_recv reads their replies first (within
 * the request's --timeout).
 */
struct redis	*redis_connect_start(const struct url *u,
		    const struct redis_opts *opts, struct err *e);
int		 redis_connect_send(struct redis *, struct err *);
/*
 * Whether a connect started with redis_connect_start has not been
 * finished by redis_connect_send yet, and whether it has completed (or
 * failed), so that redis_connect_send will not wait.
 */
int		 redis_connecting(const struct redis *);
int		 redis_connected(const struct redis *);
int		 redis_connect_end(struct redis *, struct err *);
void		 redis_close(struct redis *);
/* Give up on the connection (a request that will not be waited for). */
void		 redis_abandon(struct redis *);
/* The socket, to poll for a reply on several connections at once. */
int		 redis_fd(const struct redis *);
/* When the reply to the request in flight is due (CLOCK_MONOTONIC ms). */
int64_t		 redis_deadline(const struct redis *);
/*
 * The URL for messages, and whether the connection is unusable: failed,
 * or closed by the server while idle.
 */
const char	*redis_display(const struct redis *);
int		 redis_broken(const struct redis *);
/*
 * The server's run_id, learnt with INFO server on connecting when
 * opts->identify is set (a quorum); "" until then, or if it had none.
 */
const char	*redis_run_id(const struct redis *);

/*
 * Send a command now and collect its reply later, so that a caller with
 * several connections can have one request in flight on each (quorum.c).
 * The reply deadline is fixed at send time: --timeout from now, plus
 * extra_ms for commands that block on the server (BLPOP).
 */
int		 redis_send(struct redis *, int argc, const char **argv,
		    const size_t *argvlen, int64_t extra_ms, struct err *);
/*
 * Send a script: EVALSHA, and on a NOSCRIPT reply, EVAL of the body
 * (redis_recv does that transparently).  keys and args must stay valid
 * until redis_recv returns.
 */
int		 redis_send_script(struct redis *, struct script *,
		    int nkeys, const char **keys, int nargs, const char **args,
		    struct err *);
/*
 * The same, after a BLPOP of wait_key for at most wait_ms, in one write:
 * the server runs the script the moment the BLPOP returns, popped or
 * timed out, with no round trip between the two.  redis_recv returns the
 * script's reply.  The request is due within wait_ms + --timeout.
 */
int		 redis_send_wait_script(struct redis *, const char *wait_key,
		    int64_t wait_ms, struct script *, int nkeys,
		    const char **keys, int nargs, const char **args,
		    struct err *);
/* A BLPOP timeout of ms milliseconds, as seconds (at least 1 ms). */
void		 redis_timeout_arg(char *buf, size_t len, int64_t ms);
/*
 * Wait for the reply to the oldest request.  An error reply is returned
 * as a reply (type REDIS_T_ERROR), not as a failure: -1 means the
 * connection failed or timed out, and the connection is then broken.
 */
int		 redis_recv(struct redis *, struct redis_reply **,
		    struct err *);
/* redis_send + redis_recv, with an error reply turned into a failure. */
struct redis_reply *redis_command(struct redis *, struct err *,
		    int argc, const char **argv, const size_t *argvlen);
/* The same with NUL-terminated arguments, NULL-terminated list. */
struct redis_reply *redis_commandv(struct redis *, struct err *, ...);

void		 redis_reply_free(struct redis_reply *);
/*
 * The first reply in buf, or NULL if buf holds no whole, valid one (for
 * the tests and the fuzzer: what the server says goes through here too).
 */
struct redis_reply *redis_parse(const char *buf, size_t len);
/* Fill e from an error reply: "URL: WHAT TEXT", never with the password. */
void		 redis_reply_error(struct redis *, const struct redis_reply *,
		    const char *what, struct err *);

#endif
