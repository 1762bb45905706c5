/* held.c: clone a held lock onto connections of its own. */

/*
 * The one place a held lock is copied.  Everything the lock's scripts
 * and lock.c's arithmetic read after the acquire comes along: a field
 * left out here is a field every holder loses (the servers the acquire
 * won were lost on such a copy once: a server never won, silent, then
 * counted as holding the lock and hid a loss until the validity ran out;
 * see majority_left in lock.c).  What only the acquire reads (its wait,
 * its waiter's entry, the holder it saw) stays behind.  A field added
 * here is packed too (put_lock in held-pack.c): exec's guard gives the
 * lock back from a pack once rlock has died.
 */

#include <string.h>

#include "held.h"

void
held_clone(struct held *h, const struct lock *src, const struct held_target *t)
{
	struct lock	*l = &h->l;

	quorum_init(&h->q, t->urls, t->nurls, t->opts);
	lock_init(l, &h->q, t->prefix, src->name, src->token);
	l->ttl_ms = src->ttl_ms;
	l->fence = src->fence;
	l->valid_until = src->valid_until;
	l->acquired_at = src->acquired_at;
	l->taken_at = src->taken_at;
	memcpy(l->run, src->run, sizeof l->run);
	l->won = src->won;
	l->won_known = src->won_known;
	l->fifo = src->fifo;
	l->limit = src->limit;
	l->shared = src->shared;
	l->every_ms = src->every_ms;
	l->retry_failed = src->retry_failed;
	l->wait_replicas = src->wait_replicas;
	l->wait_timeout_ms = src->wait_timeout_ms;
	l->history_len = src->history_len;
	l->history_ttl_ms = src->history_ttl_ms;
	l->meta = src->meta;
}

void
held_return(struct lock *dst, const struct held *h)
{
	dst->valid_until = h->l.valid_until;
	dst->ttl_ms = h->l.ttl_ms;
	dst->fence = h->l.fence;
	dst->won = h->l.won;
	dst->won_known = h->l.won_known;
}

void
held_free(struct held *h)
{
	quorum_close(&h->q);
	lock_free(&h->l);
}
