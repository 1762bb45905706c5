/* held-pack.c: a held lock's target and identity as bytes, for another process to give it back. */

/*
 * exec's guard gives the lock back once rlock has died (guard-release.c),
 * from what rlock packed here before the guard started: the target as
 * rlock settled it (the URLs, struct redis_opts, struct tls_opts, the
 * prefix) and what held_clone takes of the lock.  Nothing is settled
 * again: no config file, no environment, no option is read after rlock's
 * own start.
 *
 * The same binary packs and unpacks, on the same machine: numbers go as
 * they are in memory.  A string is its length (-1: NULL), its bytes and
 * a NUL, so that the unpacked strings point into the pack's own copy
 * (held_unpack), which one secret_free wipes, passwords and all; both
 * are secret memory (util.h), which a core dump leaves out.
 *
 * Drift: every struct of the target is rebuilt with a positional
 * initializer (the *_of functions below), which
 * -Wmissing-field-initializers (an error here, whatever the build's flags)
 * fails to build once the struct has a field more than it lists; the unit test (tests/unit.c, test_held_pack) fills
 * every field with a value of its own and compares each after the round
 * trip, which a field packed out of order or not at all fails.  The lock's
 * fields are held_clone's (held.c): one added there is added here.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "held.h"
#include "util.h"

/* Whatever the build's flags: a struct's field left out fails it. */
#pragma GCC diagnostic error "-Wmissing-field-initializers"

#define PACK_MAGIC	0x706c6872u	/* "rhlp" */
/* More servers than a quorum's bit set holds, or seeds than a URL: bad. */
#define PACK_MAX_URLS	32
#define PACK_MAX_NODES	64

/* Counts its bytes while p is NULL, then writes them. */
struct writer {
	char	*p;
	size_t	 n;
};

static void
put(struct writer *w, const void *v, size_t len)
{
	if (w->p != NULL)
		memcpy(w->p + w->n, v, len);
	w->n += len;
}

static void
put_int(struct writer *w, int64_t v)
{
	put(w, &v, sizeof v);
}

static void
put_str(struct writer *w, const char *s)
{
	size_t	len = s != NULL ? strlen(s) : 0;

	put_int(w, s != NULL ? (int64_t)len : -1);
	if (s != NULL)
		put(w, s, len + 1);
}

static void
put_nodes(struct writer *w, const struct url_node *n, int count)
{
	int	i;

	put_int(w, count);
	for (i = 0; i < count; i++) {
		put_str(w, n[i].host);
		put_int(w, n[i].port);
	}
}

static void
put_url(struct writer *w, const struct url *u)
{
	put_int(w, u->scheme);
	put_str(w, u->host);
	put_int(w, u->port);
	put_str(w, u->path);
	put_str(w, u->user);
	put_str(w, u->password);
	put_int(w, u->db);
	put_str(w, u->display);
	put_nodes(w, u->sentinels, u->nsentinels);
	put_str(w, u->master);
	put_int(w, u->tls);
	put_nodes(w, u->seeds, u->nseeds);
}

static void
put_tls(struct writer *w, const struct tls_opts *t)
{
	put_int(w, t != NULL);
	if (t == NULL)
		return;
	put_str(w, t->ca);
	put_str(w, t->cert);
	put_str(w, t->key);
	put_str(w, t->server_name);
	put_int(w, t->insecure);
}

static void
put_opts(struct writer *w, const struct redis_opts *o)
{
	put_int(w, o->connect_timeout_ms);
	put_int(w, o->timeout_ms);
	put_str(w, o->password);
	put_tls(w, o->tls);
	put_str(w, o->sentinel_user);
	put_str(w, o->sentinel_password);
	put_int(w, o->identify);
	put_int(w, o->check_version);
	put_int(w, o->offer_wait);
	put_int(w, o->end_ms);
}

/* What held_clone takes of the lock, in its order. */
static void
put_lock(struct writer *w, const struct lock *l)
{
	put_str(w, l->name);
	put_str(w, l->token);
	put_int(w, l->ttl_ms);
	put_int(w, l->fence);
	put_int(w, l->valid_until);
	put_int(w, l->acquired_at);
	put_int(w, l->taken_at);
	put(w, l->run, sizeof l->run);
	put_int(w, l->won);
	put_int(w, l->won_known);
	put_int(w, l->fifo);
	put_int(w, l->limit);
	put_int(w, l->shared);
	put_int(w, l->every_ms);
	put_int(w, l->retry_failed);
	put_int(w, l->wait_replicas);
	put_int(w, l->wait_timeout_ms);
	put_int(w, l->history_len);
	put_int(w, l->history_ttl_ms);
	put_str(w, l->meta.host);
	put_int(w, l->meta.pid);
	put_str(w, l->meta.user);
	put_str(w, l->meta.command);
}

static void
put_all(struct writer *w, const struct lock *l, const struct held_target *t)
{
	int	i;

	put_int(w, PACK_MAGIC);
	put_str(w, t->prefix);
	put_int(w, t->nurls);
	for (i = 0; i < t->nurls; i++)
		put_url(w, &t->urls[i]);
	put_opts(w, t->opts);
	put_lock(w, l);
}

char *
held_pack(const struct lock *l, const struct held_target *t, size_t *len)
{
	struct writer	w = { NULL, 0 };

	/* Counted first: one allocation, no realloc's copy of a password. */
	put_all(&w, l, t);
	*len = w.n;
	w.p = secret_alloc(w.n);
	w.n = 0;
	put_all(&w, l, t);
	return w.p;
}

/* ------------------------------------------------------------ unpacking */

/* A cursor on the pack's copy; bad once anything did not fit. */
struct reader {
	char	*p, *end;
	int	 bad;
};

static void
get(struct reader *r, void *v, size_t len)
{
	if (r->bad || (size_t)(r->end - r->p) < len) {
		r->bad = 1;
		memset(v, 0, len);
		return;
	}
	memcpy(v, r->p, len);
	r->p += len;
}

static int64_t
get_int(struct reader *r)
{
	int64_t	v;

	get(r, &v, sizeof v);
	return v;
}

/* An int field's value; out of its range: bad. */
static int
get_i(struct reader *r)
{
	int64_t	v = get_int(r);

	if (v < INT32_MIN || v > INT32_MAX) {
		r->bad = 1;
		return 0;
	}
	return (int)v;
}

static char *
get_str(struct reader *r)
{
	int64_t	 len = get_int(r);
	char	*s;

	if (r->bad || len == -1)
		return NULL;
	if (len < 0 || len >= r->end - r->p || r->p[len] != '\0' ||
	    memchr(r->p, '\0', (size_t)len) != NULL) {
		r->bad = 1;
		return NULL;
	}
	s = r->p;
	r->p += len + 1;
	return s;
}

/* A count of things that follow, at most max. */
static int
get_count(struct reader *r, int max)
{
	int	n = get_i(r);

	if (n < 0 || n > max) {
		r->bad = 1;
		return 0;
	}
	return n;
}

/*
 * The structs of the target, rebuilt each with a positional initializer
 * that lists every field in the struct's order: a field added to the
 * struct and not here fails the build (see the top of the file).  The
 * values are read first, in order: an initializer's expressions are
 * evaluated in no set order.
 */
static struct url_node *
get_nodes(struct reader *r, int *count)
{
	struct url_node	*n;
	char		*host;
	int		 i, port;

	if ((*count = get_count(r, PACK_MAX_NODES)) == 0)
		return NULL;
	n = xcalloc((size_t)*count, sizeof *n);
	for (i = 0; i < *count; i++) {
		host = get_str(r);
		port = get_i(r);
		n[i] = (struct url_node){ host, port };
	}
	return n;
}

static struct url
url_of(struct reader *r)
{
	struct url_node	*sentinels, *seeds;
	enum url_scheme	 scheme;
	char		*host, *path, *user, *password, *display, *master;
	int		 port, db, nsentinels, tls, nseeds;

	scheme = (enum url_scheme)get_i(r);
	host = get_str(r);
	port = get_i(r);
	path = get_str(r);
	user = get_str(r);
	password = get_str(r);
	db = get_i(r);
	display = get_str(r);
	sentinels = get_nodes(r, &nsentinels);
	master = get_str(r);
	tls = get_i(r);
	seeds = get_nodes(r, &nseeds);
	return (struct url){ scheme, host, port, path, user, password, db,
	    display, sentinels, nsentinels, master, tls, seeds, nseeds };
}

static struct tls_opts
tls_of(struct reader *r)
{
	const char	*ca, *cert, *key, *server_name;
	int		 insecure;

	ca = get_str(r);
	cert = get_str(r);
	key = get_str(r);
	server_name = get_str(r);
	insecure = get_i(r);
	return (struct tls_opts){ ca, cert, key, server_name, insecure };
}

static struct redis_opts
opts_of(struct reader *r, struct tls_opts *tls_store)
{
	const struct tls_opts	*tls = NULL;
	const char		*password, *sentinel_user, *sentinel_password;
	int64_t			 connect_timeout_ms, timeout_ms, end_ms;
	int			 identify, check_version, offer_wait;

	connect_timeout_ms = get_int(r);
	timeout_ms = get_int(r);
	password = get_str(r);
	if (get_i(r)) {
		*tls_store = tls_of(r);
		tls = tls_store;
	}
	sentinel_user = get_str(r);
	sentinel_password = get_str(r);
	identify = get_i(r);
	check_version = get_i(r);
	offer_wait = get_i(r);
	end_ms = get_int(r);
	return (struct redis_opts){ connect_timeout_ms, timeout_ms, password,
	    tls, sentinel_user, sentinel_password, identify, check_version,
	    offer_wait, end_ms };
}

static void
get_lock(struct reader *r, struct lock *l)
{
	const char	*token;

	memset(l, 0, sizeof *l);
	l->name = get_str(r);
	if ((token = get_str(r)) == NULL || strlen(token) > TOKEN_MAX)
		r->bad = 1;
	else
		memcpy(l->token, token, strlen(token) + 1);
	l->ttl_ms = get_int(r);
	l->fence = get_int(r);
	l->valid_until = get_int(r);
	l->acquired_at = get_int(r);
	l->taken_at = get_int(r);
	get(r, l->run, sizeof l->run);
	l->run[sizeof l->run - 1] = '\0';
	l->won = (unsigned)get_int(r);
	l->won_known = get_i(r);
	l->fifo = get_i(r);
	l->limit = get_i(r);
	l->shared = get_i(r);
	l->every_ms = get_int(r);
	l->retry_failed = get_i(r);
	l->wait_replicas = get_i(r);
	l->wait_timeout_ms = get_int(r);
	l->history_len = get_i(r);
	l->history_ttl_ms = get_int(r);
	l->meta.host = get_str(r);
	l->meta.pid = get_int(r);
	l->meta.user = get_str(r);
	l->meta.command = get_str(r);
	if (l->name == NULL)
		r->bad = 1;
}

int
held_unpack(struct held_unpacked *u, const char *pack, size_t len)
{
	struct reader	r;
	int		i, n;

	memset(u, 0, sizeof *u);
	u->copy = secret_strndup(pack, len);
	u->len = len;
	r = (struct reader){ u->copy, u->copy + len, 0 };
	if (get_int(&r) != PACK_MAGIC)
		r.bad = 1;
	u->t.prefix = get_str(&r);
	n = get_count(&r, PACK_MAX_URLS);
	u->urls = xcalloc(n > 0 ? (size_t)n : 1, sizeof *u->urls);
	for (i = 0; i < n && !r.bad; i++, u->nurls++)
		u->urls[i] = url_of(&r);
	u->opts = opts_of(&r, &u->tls);
	get_lock(&r, &u->l);
	u->t.urls = u->urls;
	u->t.nurls = u->nurls;
	u->t.opts = &u->opts;
	if (r.bad || r.p != r.end || n == 0 || u->t.prefix == NULL) {
		held_unpacked_free(u);
		return -1;
	}
	return 0;
}

void
held_unpacked_free(struct held_unpacked *u)
{
	int	i;

	for (i = 0; i < u->nurls; i++) {
		free(u->urls[i].sentinels);
		free(u->urls[i].seeds);
	}
	free(u->urls);
	secret_free(u->copy);	/* wiped: the passwords */
	explicit_bzero(&u->opts, sizeof u->opts);
	memset(u, 0, sizeof *u);
}
