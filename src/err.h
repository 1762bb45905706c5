/* err.h: how lower layers report failure to the command layer. */
#ifndef RLOCK_ERR_H
#define RLOCK_ERR_H

#include <stdarg.h>

/*
 * Lower layers never exit.  They return -1 (or NULL) and fill a struct err
 * with a kind and a one-line message; only the command layer turns the kind
 * into an exit status (err_exit_status), after releasing whatever it holds.
 */
enum err_kind {
	ERR_NONE = 0,
	ERR_BUSY,		/* lock held by someone else past --wait */
	ERR_NOT_HOLDER,		/* release/extend: token does not own the lock */
	ERR_USAGE,		/* bad option, duration, name, URL */
	/* Redis could not be used (exit 69), by reason: */
	ERR_UNAVAILABLE,	/* the connection failed otherwise (reset, closed) */
	ERR_TIMEOUT,		/* no connect or reply within its time */
	ERR_REFUSED,		/* refused, unreachable, name not resolved */
	ERR_AUTH,		/* the server refused our credentials */
	ERR_PROTOCOL,		/* bytes that are not RESP, a TLS failure */
	ERR_REPLY,		/* the server answered with an error */
	ERR_SOFTWARE,		/* internal error, failed write of output */
	ERR_LOST,		/* exec: lock lost while the command ran */
	ERR_INTERRUPTED,	/* a signal arrived while waiting */
	ERR_DEADLOCK,		/* an upgrade refused: another reader's waits */
};

struct err {
	enum err_kind	kind;
	int		signo;		/* ERR_INTERRUPTED: which signal */
	char		msg[512];
};

void	err_set(struct err *, enum err_kind, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
void	err_vset(struct err *, enum err_kind, const char *, va_list);
/* Whether kind means "Redis could not be used" (exit 69). */
int	err_unavailable(enum err_kind);
/* Put "what: " in front of the message already there. */
void	err_prefix(struct err *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	err_clear(struct err *);
/* The exit status SPEC.md gives the kind. */
int	err_exit_status(enum err_kind);

/* The exit statuses, from sysexits(3). */
#define EXIT_BUSY		1
#define EXIT_USAGE		64
#define EXIT_UNAVAILABLE	69
#define EXIT_SOFTWARE		70
#define EXIT_LOST		75
#define EXIT_NOPERM		77	/* a file rlock must read, this user may not */
#define EXIT_TIMEOUT		124	/* exec: --max-runtime ran out (timeout(1)) */
#define EXIT_DEADLOCK		35	/* an upgrade refused (fcntl's EDEADLK) */
#define EXIT_PAUSED		38	/* exec --every: its schedule is paused */

#endif
