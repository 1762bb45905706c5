/* tlscache.h: the per-user store of TLS sessions (tls.c's only). */
#ifndef RLOCK_TLSCACHE_H
#define RLOCK_TLSCACHE_H

#include <sys/types.h>

#include <stddef.h>
#include <time.h>

/* The longest session kept: OpenSSL's run well under 2 KiB. */
#define TLSCACHE_MAX	16384

/*
 * Read the entry called name (hex, from tls.c's key) into buf (at most
 * TLSCACHE_MAX bytes): its length, 0 when there is none (or it has
 * expired), -1 when it cannot be used, with why filled.  Never fails the
 * caller: a cache that is not there is a full handshake.
 */
ssize_t	tlscache_load(const char *name, unsigned char *buf, char *why,
	    size_t whylen);
/*
 * Replace the entry called name with len bytes, to be used until expires
 * (a wall-clock time): atomically (a temporary file renamed over it), and
 * pruning entries past their time.  -1 with why filled if it cannot.
 */
int	tlscache_store(const char *name, const unsigned char *buf, size_t len,
	    time_t expires, char *why, size_t whylen);
#endif
