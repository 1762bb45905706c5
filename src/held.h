/* held.h: a lock that is held, as one object that its keepers share. */
#ifndef RLOCK_HELD_H
#define RLOCK_HELD_H

#include "lock.h"
#include "quorum.h"
#include "url.h"

/*
 * Where a lock lives: its servers and how to reach them, and its key
 * prefix.  Made once by the command; what it points to outlives every
 * holder of it.
 */
struct held_target {
	const char		*prefix;
	const struct url	*urls;
	int			 nurls;
	const struct redis_opts	*opts;
};

/*
 * A held lock on connections of its own: exec's heartbeat thread and
 * acquire --hold's keeper each keep one, cloned from the lock the command
 * took (held_clone), so that nothing of the holding -- the token, the
 * fence, the TTL, the validity, the servers the acquire won -- is left
 * behind on a copy made field by field.
 */
struct held {
	struct quorum	 q;
	struct lock	 l;	/* on q; its name is src's (outlives it) */
};

/*
 * Clone src (held: acquired, with ttl_ms and valid_until set) onto new
 * connections to t's servers, made on the first request.  h must not move
 * afterwards (h->l points to h->q).
 */
void	held_clone(struct held *h, const struct lock *src,
	    const struct held_target *t);
/*
 * What a clone learned of the lock goes back to the lock it was cloned
 * from (once nothing else uses the clone): how long it is surely held,
 * its TTL and fence as the last extend gave them, and the servers that
 * still hold it (a server that said "not the holder"
 * no longer counts: see majority_left in lock.c).
 */
void	held_return(struct lock *dst, const struct held *h);
void	held_free(struct held *h);

/*
 * A held lock as bytes, for a process that gives it back in the holder's
 * place (exec's guard, once rlock has died: guard-release.c): t as it was
 * settled, every field of it (the URLs, their passwords, redis_opts and
 * its tls_opts, the prefix), and what held_clone takes of l.  A new
 * buffer of *len bytes, which holds passwords: secret memory (util.h),
 * freed (and wiped) with secret_free.
 */
char	*held_pack(const struct lock *l, const struct held_target *t,
	    size_t *len);
/* What held_unpack rebuilds, pointing into its own copy of the pack. */
struct held_unpacked {
	struct held_target	 t;
	struct url		*urls;
	int			 nurls;
	struct redis_opts	 opts;
	struct tls_opts		 tls;
	/* For held_clone only: no keys, no quorum (not lock_init'ed). */
	struct lock		 l;
	char			*copy;
	size_t			 len;
};
/* 0, or -1 if pack is not a whole pack (u is then empty). */
int	held_unpack(struct held_unpacked *u, const char *pack, size_t len);
/* Free u, its passwords wiped. */
void	held_unpacked_free(struct held_unpacked *u);

#endif
