/* transport.h: byte streams to a Redis server, bounded by deadlines. */
#ifndef RLOCK_TRANSPORT_H
#define RLOCK_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "url.h"

/*
 * A transport is a connected, non-blocking, close-on-exec socket (TCP or
 * Unix; TLS slots in underneath through the ops table).  Every call takes
 * an absolute deadline in CLOCK_MONOTONIC milliseconds and waits with
 * poll() for what remains of it; none blocks past it.  A deadline of -1
 * means no bound.
 */
struct transport;

struct transport_ops {
	ssize_t	(*read)(struct transport *, void *, size_t);
	ssize_t	(*write)(struct transport *, const void *, size_t);
	void	(*close)(struct transport *);
};

struct transport {
	int				 fd;
	const struct transport_ops	*ops;
	void				*tls;	/* TLS state, when there is one */
	const char			*display; /* the URL, for messages */
};

/* Connect to u, within deadline.  NULL and e filled on failure. */
struct transport	*transport_connect(const struct url *u, int64_t deadline,
			    struct err *e);
/* Write all of buf, or fail. */
int			 transport_write(struct transport *, const void *, size_t,
			    int64_t deadline, struct err *);
/* Read what is there (at least one byte), or fail; 0 means EOF. */
ssize_t			 transport_read(struct transport *, void *, size_t,
			    int64_t deadline, struct err *);
void			 transport_close(struct transport *);
/*
 * Whether an idle connection still looks usable: the server has not
 * closed it or sent anything unasked.  A long-idle connection (exec's,
 * while the command ran for hours) is checked before it is used again.
 */
int			 transport_idle_ok(struct transport *);

/*
 * Set by the command layer's signal handler: a wait that sees it set gives
 * up with ERR_INTERRUPTED instead of sleeping on.
 */
extern volatile int	 transport_interrupted;

#endif
