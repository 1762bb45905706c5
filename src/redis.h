/* redis.h: one Redis server, and a request to it, in non-blocking steps. */
#ifndef RLOCK_REDIS_H
#define RLOCK_REDIS_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "netopts.h"
#include "scripts.h"
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

/*
 * What to send: a command (argv), or a script (EVALSHA, and EVAL of the
 * body when the server answers NOSCRIPT), optionally behind a BLPOP of
 * wait_key for at most wait_ms in the same write: the server runs the
 * script the moment the BLPOP returns, popped or timed out, with no round
 * trip between the two.  Everything pointed to must stay valid until the
 * request is done.
 */
struct redis_req {
	int		  argc;
	const char	**argv;
	const size_t	 *argvlen;	/* NULL: NUL-terminated */
	struct script	 *script;
	int		  nkeys, nargs;
	const char	**keys, **args;
	const char	 *wait_key;
	const char	 *wait_key2;	/* a second list to block on; NULL */
	int64_t		  wait_ms;
	int64_t		  extra_ms;	/* the command blocks this long (WAIT) */
	/*
	 * The script's EVALSHA as formatted for the first server, for the
	 * others of a round to send as it is (quorum_run): formatting is
	 * most of a quorum client's own work.  NULL: formatted each time.
	 */
	struct redis_sent *sent;
};

struct redis_sent {
	char		*cmd;		/* NULL until formatted */
	int		 len;
};

/*
 * The most sockets one server has open at once: a transport's connect
 * attempts (4), or those of three sentinels asked at once.
 */
#define REDIS_MAX_FDS	12

struct redis;

/*
 * A server, unconnected: it connects when first asked, and again after
 * any failure.  u and opts must outlive it.
 */
struct redis	*redis_new(const struct url *u, const struct redis_opts *opts);
void		 redis_free(struct redis *);
/* Start connecting now, if it is not (0, or -1 with e filled). */
int		 redis_prepare(struct redis *, struct err *e);
/*
 * Start a request (connecting first if need be).  0, or -1 with e filled.
 * Then, until it is done: poll redis_pollfds until redis_deadline (or
 * redis_wake), and call redis_step, which returns 1 when the reply is
 * there (redis_take), 0 while pending, -1 when the request failed (e
 * filled, the connection closed).  An error reply is a reply, not a
 * failure.  A failure names the server, and says "cannot connect" for a
 * connect (then redis_connect_failed is true).
 */
int		 redis_start(struct redis *, const struct redis_req *,
		    struct err *e);
int		 redis_step(struct redis *, struct err *e);
struct redis_reply *redis_take(struct redis *);
/* The sockets to poll (room for REDIS_MAX_FDS); how many. */
int		 redis_pollfds(const struct redis *, struct pollfd *);
/* CLOCK_MONOTONIC ms: when the request fails; when to step regardless (-1: no need). */
int64_t		 redis_deadline(const struct redis *);
int64_t		 redis_wake(const struct redis *);
/* Give up on the request in flight: the connection is closed. */
void		 redis_abandon(struct redis *);
int		 redis_connect_failed(const struct redis *);
/*
 * Whether a request (beyond the handshake) was ever written to the
 * server: one that never was cannot hold anything this process took.
 */
int		 redis_reached(const struct redis *);

/*
 * The error code ("WRONGTYPE", "NOPERM", ...) of the error reply to the
 * last request's BLPOP (see struct redis_req), or NULL if it popped or
 * timed out: the request's own reply came at once, without the wait.
 */
const char	*redis_wait_error(const struct redis *);
/* Whether the last request's BLPOP took an element (a wake). */
int		 redis_wait_popped(const struct redis *);
/*
 * Whether the request in flight went out whole and its reply has not
 * come: its BLPOP still blocks (the script behind it runs when the BLPOP
 * returns, unless the connection is closed first), or the script is
 * under way.
 */
int		 redis_wait_unanswered(const struct redis *);

/* The URL for messages: where the server is now. */
const char	*redis_display(const struct redis *);
/*
 * The server's run_id, learnt with INFO server on connecting when
 * opts->identify is set (a quorum); "" until then, or if it had none.
 */
const char	*redis_run_id(const struct redis *);

/*
 * The grace past a command's end (opts->end_ms) that a request in flight
 * may take, and the bound of a give-back after a failure: a sixteenth of
 * --timeout, at least 50 ms.  The two together keep a command
 * within its -w (or --timeout) plus a quarter of --timeout.
 */
int64_t		 redis_grace_ms(const struct redis_opts *);

/* The hash slot of a key, as Redis Cluster computes it. */
int		 redis_key_slot(const char *key);
/* A BLPOP timeout of ms milliseconds, as seconds (at least 1 ms). */
void		 redis_timeout_arg(char *buf, size_t len, int64_t ms);
void		 redis_reply_free(struct redis_reply *);
/*
 * The first reply in buf, or NULL if buf holds no whole, valid one (for
 * the tests and the fuzzer: what the server says goes through here too).
 */
struct redis_reply *redis_parse(const char *buf, size_t len);
/* Fill e from an error reply: "URL: WHAT TEXT", never with the password. */
/*
 * A script's error reply (see run() in lib.lua) in words, into out: 1, or
 * 0 when text is no script's error.
 */
int		 redis_script_words(const char *text, char *out, size_t len);
void		 redis_reply_error(struct redis *, const struct redis_reply *,
		    const char *what, struct err *);

#endif
