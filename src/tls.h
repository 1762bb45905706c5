/* tls.h: one TLS session over a connected socket (transport.c's business only). */
#ifndef RLOCK_TLS_H
#define RLOCK_TLS_H

#include <sys/types.h>

#include "err.h"
#include "netopts.h"

struct tls;

/*
 * A TLS client over fd (connected, non-blocking), to be verified against
 * host (or o->server_name) unless o->insecure.  Loads libssl on first use.
 * Resumes the session of an earlier run to host:port when one was kept
 * for the same name, CAs and client certificate (see tls.c).
 * NULL with e filled (ERR_USAGE for a bad --tls-* file).
 */
struct tls	*tls_new(int fd, const char *host, int port,
		    const struct tls_opts *o, struct err *e);
/*
 * Drive the handshake without waiting: 1 done, 0 under way (poll fd for
 * *events), -1 failed with e filled (the reason names what failed: the CA,
 * the name, the client certificate).
 */
int		 tls_handshake(struct tls *, short *events, struct err *e);
/*
 * As read(2) and send(2) on a non-blocking socket; -1 with errno EAGAIN
 * says which way to wait in *events, EPROTO that TLS failed (tls_why).
 */
ssize_t		 tls_read(struct tls *, void *, size_t, short *events);
ssize_t		 tls_write(struct tls *, const void *, size_t, short *events);
const char	*tls_why(const struct tls *);
/* Free the session (one try at close_notify); the fd stays open. */
void		 tls_free(struct tls *);
#ifdef RLOCK_STATIC_TLS
/* The OpenSSL linked in, as its version string says. */
const char	*tls_library(void);
#endif

#endif
