/* transport.h: byte streams to a Redis server, bounded by deadlines. */
#ifndef RLOCK_TRANSPORT_H
#define RLOCK_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct addrinfo;

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

/* TLS settings for rediss:// URLs. */
struct tls_opts {
	const char	*ca;		/* CA file; NULL: the system store */
	const char	*cert;		/* client certificate (chain) */
	const char	*key;		/* its private key */
	const char	*server_name;	/* checked instead of the URL's host */
	int		 insecure;	/* do not verify the server at all */
};

struct transport_ops {
	ssize_t	(*read)(struct transport *, void *, size_t);
	ssize_t	(*write)(struct transport *, const void *, size_t);
	void	(*close)(struct transport *);
};

struct transport {
	int				 fd;
	const struct transport_ops	*ops;
	void				*tls;	/* SSL *, when there is one */
	void				*tls_ctx; /* its SSL_CTX */
	short				 want;	/* poll event the last EAGAIN needs */
	char				 tls_err[160]; /* why the last TLS call failed */
	int				 tls_used;	/* a read has succeeded */
	int				 tls_has_cert;	/* we sent a client certificate */
	const char			*display; /* the URL, for messages */

	/* While connecting (transport_start .. transport_finish). */
	int				 connecting;
	struct addrinfo			*addrs;	/* the host's addresses */
	struct addrinfo			*addr;	/* the one being tried */
	int64_t				 budget; /* the connect timeout */
};

/*
 * Connect to u, within deadline, and for rediss:// complete the TLS
 * handshake (verifying the server unless tls->insecure) within it too.
 * NULL and e filled on failure.
 */
struct transport	*transport_connect(const struct url *u,
			    const struct tls_opts *tls, int64_t deadline,
			    struct err *e);
/*
 * The same in two steps, so that several connections can be under way at
 * once: transport_start creates the socket and starts the connect (after
 * resolving the name), transport_finish waits for it -- trying the
 * host's other addresses after it, if it fails -- and does the TLS
 * handshake.  One deadline covers both.
 */
struct transport	*transport_start(const struct url *u, int64_t deadline,
			    struct err *e);
int			 transport_finish(struct transport *,
			    const struct url *u, const struct tls_opts *tls,
			    int64_t deadline, struct err *e);
/* Whether transport_finish would find the connect done (or failed). */
int			 transport_connected(const struct transport *);
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

#endif
