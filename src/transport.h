/* transport.h: non-blocking byte streams to one server (redis.c's business only). */
#ifndef RLOCK_TRANSPORT_H
#define RLOCK_TRANSPORT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "netopts.h"
#include "url.h"

/* The most sockets one transport has open at once (connect attempts). */
#define TRANSPORT_MAX_FDS	4

/*
 * A TCP, Unix-socket or TLS connection that never waits: each call does
 * what it can now; the caller polls what transport_pollfds asks for and
 * calls transport_step (while connecting) or read/write again.  Time is
 * the caller's to bound.
 */
struct transport;

/*
 * Resolve u's host and start connecting (to its first address; the
 * others follow, see transport.c).  u and tls must outlive the transport.
 * NULL with e filled when nothing could be started.
 */
struct transport *transport_open(const struct url *u,
		    const struct tls_opts *tls, struct err *e);
/* Go on connecting, then the TLS handshake: 1 ready, 0 under way, -1. */
int		 transport_step(struct transport *, struct err *e);
int		 transport_ready(const struct transport *);
/*
 * The sockets to poll into pfd (room for TRANSPORT_MAX_FDS), with events
 * the caller wants once ready (TLS may turn them round); how many.
 */
int		 transport_pollfds(const struct transport *, short events,
		    struct pollfd *pfd);
/* When transport_step should run even if no socket is ready; -1: never. */
int64_t		 transport_wake(const struct transport *);
/* e for a connect that ran out of its budget, naming the step. */
void		 transport_timed_out(const struct transport *,
		    int64_t budget_ms, struct err *e);
/* Bytes written or read, 0 if none can be now, -1 failed (EOF too). */
ssize_t		 transport_write(struct transport *, const void *, size_t,
		    struct err *);
ssize_t		 transport_read(struct transport *, void *, size_t,
		    struct err *);
void		 transport_close(struct transport *);
/*
 * Whether an idle connection still looks usable: the server has not
 * closed it or sent anything unasked.  A long-idle connection (exec's,
 * while the command ran for hours) is checked before it is used again.
 */
int		 transport_idle_ok(struct transport *);

#endif
