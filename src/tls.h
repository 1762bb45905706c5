/* tls.h: TLS under a transport (transport.c's business only). */
#ifndef RLOCK_TLS_H
#define RLOCK_TLS_H

#include <stdint.h>

#include "err.h"
#include "transport.h"
#include "url.h"

/*
 * Run the TLS handshake on t's connected socket within deadline, then
 * switch t's ops to TLS.  0, or -1 with e filled (the reason names what
 * failed: the CA, the name, the client certificate, the time).
 */
int	tls_start(struct transport *t, const struct url *u,
	    const struct tls_opts *o, int64_t deadline, int64_t budget,
	    struct err *e);

/* Wait for fd to be ready for events until deadline: 1 ready, 0 timeout, -1. */
int	transport_wait_fd(int fd, short events, int64_t deadline,
	    struct err *e);

#endif
