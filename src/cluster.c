/* cluster.c: a Cluster's doors, its slot map and its redirections. */

/*
 * A struct redis whose URL names seeds, or whose server answers MOVED or
 * ASK, is a Cluster: its doors are the nodes a request may start at (the
 * seeds first, then the nodes redirections named), and a slot -> door
 * map, learnt from MOVED replies and answers, says where a key's request
 * starts.  A request that fails at its door (a connect, a closed
 * connection, no reply in time) moves to another while it has time; one
 * redirected goes where it is sent, ASKING first for an ASK.  All of it
 * within the request's one deadline (see redis.c): nodes that send a
 * request back and forth for ever cost the caller that much and no more.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "duration.h"
#include "log.h"
#include "redis-private.h"
#include "util.h"

/*
 * The doors of a Cluster: the nodes a request may start at, the seeds of
 * the URL first, then the nodes redirections named.  At most this many
 * (a tried-bitmask's bits).
 */
#define MAX_DOORS	64
#define CLUSTER_SLOTS	16384

/* CRC16/XMODEM (polynomial 0x1021, no reflection, start 0): Cluster's. */
static unsigned
crc16(const char *p, size_t len)
{
	unsigned	crc = 0;
	int		k;

	while (len-- > 0) {
		crc ^= (unsigned)(unsigned char)*p++ << 8;
		for (k = 0; k < 8; k++)
			crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
	}
	return crc & 0xffff;
}

int
redis_key_slot(const char *key)
{
	const char	*open, *close;

	/* A non-empty {tag} decides, as for every rlock key. */
	if ((open = strchr(key, '{')) != NULL &&
	    (close = strchr(open + 1, '}')) != NULL && close > open + 1)
		return (int)(crc16(open + 1, (size_t)(close - open - 1)) %
		    CLUSTER_SLOTS);
	return (int)(crc16(key, strlen(key)) % CLUSTER_SLOTS);
}

/* ------------------------------------------------------------ doors */

/* The door at host:port, added if new: its index, or -1 (no room). */
static int
door_of(struct redis *r, const char *host, int port, int db)
{
	int	i;

	for (i = 0; i < r->ndoors; i++)
		if (r->doors[i]->port == port &&
		    strcasecmp(r->doors[i]->host, host) == 0)
			return i;
	if (r->ndoors == MAX_DOORS)
		return -1;
	r->doors = xrealloc(r->doors, (r->ndoors + 1) * sizeof *r->doors);
	r->doors[r->ndoors] = xcalloc(1, sizeof **r->doors);
	url_retarget(r->doors[r->ndoors], r->orig, host, port);
	r->doors[r->ndoors]->db = db;
	url_build_display(r->doors[r->ndoors]);
	return r->ndoors++;
}

/*
 * A cluster is seen (a redirection, or seeds): the URL's own node(s)
 * become the first doors, and the slot map starts empty.  Not behind a
 * Sentinel, whose master is whoever the sentinels name.
 */
void
cluster_doors_init(struct redis *r)
{
	int	i;

	if (r->ndoors > 0 || (r->orig->scheme != URL_TCP &&
	    r->orig->scheme != URL_TLS))
		return;
	if (r->orig->nseeds == 0)
		door_of(r, r->orig->host, r->orig->port, r->orig->db);
	for (i = 0; i < r->orig->nseeds; i++)
		door_of(r, r->orig->seeds[i].host, r->orig->seeds[i].port,
		    r->orig->db);
	r->slots = xmalloc(CLUSTER_SLOTS * sizeof *r->slots);
	for (i = 0; i < CLUSTER_SLOTS; i++)
		r->slots[i] = -1;
	r->home = 0;
	r->door = -1;
}

/* Where the request starts: the slot's owner, else home, else any untried. */
static int
pick_door(const struct redis *r)
{
	int	d;

	if (r->pending && r->slot >= 0 && (d = r->slots[r->slot]) >= 0 &&
	    !(r->tried & (1ULL << d)))
		return d;
	if (!(r->tried & (1ULL << r->home)))
		return r->home;
	for (d = 0; d < r->ndoors; d++)
		if (!(r->tried & (1ULL << d)))
			return d;
	return -1;
}

/* Go through door d (a new connection); -1 with e filled if it cannot start. */
static int
enter_door(struct redis *r, int d, struct err *e)
{
	r->door = d;
	r->url = r->doors[d];
	r->connect_deadline = redis_within(r, r->opts->connect_timeout_ms);
	return redis_open_transport(r, e);
}

/*
 * The request failed at its door (a connect, a closed connection, no
 * reply in time): the node is taken for dead, whatever the map said it
 * served is forgotten, and the request starts again at another door
 * while it has time.  1 when it did (pending), 0 when there is none, 2
 * when the last door tried could not even be started (e says so).
 */
int
cluster_next_door(struct redis *r, struct err *e)
{
	int	d, i, moved = 0;

	if (!r->pending || r->door < 0 || r->ndoors < 2 ||
	    redis_own_writes(r->req) || (e->kind != ERR_REFUSED &&
	    e->kind != ERR_UNAVAILABLE && e->kind != ERR_TIMEOUT))
		return 0;
	r->tried |= 1ULL << r->door;
	for (i = 0; i < CLUSTER_SLOTS; i++)
		if (r->slots[i] == r->door)
			r->slots[i] = -1;
	while (now_mono_ms() < r->req_deadline && (d = pick_door(r)) >= 0) {
		log_verbose("%s; trying the cluster's node %s", e->msg,
		    r->doors[d]->display);
		redis_drop_connection(r);
		r->ask = 0;
		r->waited = 1;	/* the wait is the caller's to make again */
		r->check_role = 0;
		if (r->home == r->door)
			r->home = d;	/* the dead one is no place to start */
		if (enter_door(r, d, e) == 0)
			return 1;
		if (e->kind != ERR_INTERRUPTED && e->kind != ERR_USAGE)
			err_prefix(e, "cannot connect to %s", r->url->display);
		moved = 2;
		r->tried |= 1ULL << d;
	}
	return moved;
}

/*
 * A Cluster: the first door that can be started (a name that does not
 * resolve fails at once), from the slot's owner or home on.
 */
int
cluster_enter_any_door(struct redis *r, struct err *e)
{
	int	d, k;

	err_set(e, ERR_UNAVAILABLE, "no node of the cluster left to try");
	if (!r->pending)
		r->tried = 0;	/* a connect ahead of any request */
	if ((d = pick_door(r)) < 0)
		d = r->home;
	for (k = 0; k < r->ndoors; k++, d = (d + 1) % r->ndoors) {
		if (r->pending && (r->tried & (1ULL << d)))
			continue;
		if (enter_door(r, d, e) == 0) {
			if (r->home != d && k > 0)
				r->home = d;
			return 0;
		}
		r->tried |= 1ULL << d;
		if (k + 1 < r->ndoors)
			log_verbose("cannot connect to %s: %s; trying the "
			    "cluster's next node", r->doors[d]->display, e->msg);
	}
	return -1;
}


/*
 * "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381": move to that
 * node (same credentials and TLS) and send the request there again; an
 * ASK redirection is for this one request and wants ASKING first.
 */
int
cluster_redirect(struct redis *r, const char *text, struct err *e)
{
	struct url	 to;
	const char	*addr, *colon;
	char		*host;
	int		 d, slot;

	/* Past the word and the slot number. */
	if ((addr = strchr(text, ' ')) == NULL ||
	    (addr = strchr(addr + 1, ' ')) == NULL ||
	    (colon = strrchr(++addr, ':')) == NULL || colon == addr) {
		err_set(e, ERR_PROTOCOL, "bad redirection: %s", text);
		return -1;
	}
	host = xstrndup(addr, (size_t)(colon - addr));
	slot = atoi(strchr(text, ' ') + 1);
	/* Kept for the words if the request runs out of time (timed_out). */
	r->redirects++;
	r->hop_slot = slot;
	snprintf(r->hop_from, sizeof r->hop_from, "%s",
	    strstr(r->url->display, "://") != NULL ?
	    strstr(r->url->display, "://") + 3 : r->url->display);
	snprintf(r->hop_to, sizeof r->hop_to, "%s", addr);
	log_verbose(strncmp(text, "ASK ", 4) == 0 ?
	    "%s: slot %d is moving to %s: asked there (redirection %d of the "
	    "request)" : "%s: slot %d is served by %s: sent there "
	    "(redirection %d of the request)", r->url->display, slot, addr,
	    r->redirects);
	cluster_doors_init(r);
	d = r->ndoors > 0 ? door_of(r, host, atoi(colon + 1), -1) : -1;
	if (d >= 0 && r->pending && (r->tried & (1ULL << d))) {
		/*
		 * A node this request could not reach: the cluster has not
		 * seen it fail yet.  Another door may know better (redis_fail()
		 * moves on), or the failover is still to come.
		 */
		err_set(e, ERR_UNAVAILABLE, "the cluster names %s for slot "
		    "%d, which cannot be reached (a failover may be under way; "
		    "%s)", r->doors[d]->display, slot, r->opts->offer_wait ?
		    "give -w to wait through it" : "try again once a replica "
		    "has taken over");
		free(host);
		return -1;
	}
	/* A door: MOVED says who serves the slot from now on. */
	if (d >= 0 && strncmp(text, "MOVED ", 6) == 0 && slot >= 0 &&
	    slot < CLUSTER_SLOTS)
		r->slots[slot] = (short)d;
	url_retarget(&to, r->orig->scheme == URL_SENTINEL ? r->url : r->orig,
	    host, atoi(colon + 1));
	free(host);
	/* Cluster has only db 0: a SELECT there would fail. */
	to.db = -1;
	r->ask = strncmp(text, "ASK ", 4) == 0;
	r->waited = 1;		/* the BLPOP is not made again */
	redis_drop_connection(r);
	url_free(&r->target);
	r->target = to;
	r->url = &r->target;
	r->door = -1;
	if (d >= 0) {
		url_free(&r->target);
		r->url = r->doors[d];
		r->door = d;
	}
	r->check_role = 0;
	r->connect_deadline = redis_within(r, r->opts->connect_timeout_ms);
	return redis_open_transport(r, e);
}

/*
 * Send the request again after a pause that doubles up to TRYAGAIN_MAX_MS,
 * to the same node (after ASKING if ask), by the same deadline: 1, or 0
 * when the deadline comes first.
 *
 * Nodes sending it back and forth (loop) answer at once, so it is the
 * request's own deadline that bounds them, not a reply's: the
 * redirections start counting again (a move may end meanwhile), and when
 * the pause does not fit, the request waits out its deadline, whose
 * words (timed_out) say what happened.
 */
int
cluster_resend_later(struct redis *r, int ask, int loop)
{
	char	d[32];

	if (loop)
		r->deadline = r->req_deadline;
	if (now_mono_ms() + r->retry_pause >= r->deadline) {
		if (!loop)
			return 0;
		r->retry_at = r->deadline + 1;	/* never: timed_out first */
		return 1;
	}
	if (loop)
		log_verbose("%s: sent back and forth %d times; again in %s",
		    r->url->display, r->redirects, duration_format(
		    r->retry_pause, d, sizeof d));
	r->retry_at = now_mono_ms() + r->retry_pause;
	if ((r->retry_pause *= 2) > TRYAGAIN_MAX_MS)
		r->retry_pause = TRYAGAIN_MAX_MS;
	r->ask = ask;
	r->waited = 1;	/* its BLPOP, if any, is done */
	r->hops = 0;
	return 1;
}

/*
 * The request's own deadline has passed after redirections: the nodes
 * kept sending it on (a loop, or a move that outlasted it).  One line that
 * says so, the last hop, and the likely cause.
 */
int
cluster_redirected_out(struct redis *r, struct err *e)
{
	char	d[32];

	err_set(e, ERR_TIMEOUT, "the request did not end within %s "
	    "(--connect-timeout + --timeout): the cluster redirected it %d "
	    "time%s, last from %s to %s (a redirect loop: is slot %d MIGRATING "
	    "toward a node that is not IMPORTING it?)", duration_format(
	    r->req_budget, d, sizeof d), r->redirects,
	    r->redirects == 1 ? "" : "s", r->hop_from, r->hop_to, r->hop_slot);
	r->url = r->orig;	/* the message names its nodes itself */
	return redis_fail(r, e, 0);
}


/* The slot of the key a request names (a script's first, a BLPOP's); -1. */
int
cluster_request_slot(const struct redis_req *q)
{
	if (q->script != NULL && q->nkeys > 0)
		return redis_key_slot(q->keys[0]);
	if (q->wait_key != NULL)
		return redis_key_slot(q->wait_key);
	return -1;
}

