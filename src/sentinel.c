/* sentinel.c: where the sentinels of a redis-sentinel:// URL say the master is. */

/*
 * A struct redis for a redis-sentinel:// URL asks the sentinels for the
 * master's address (SENTINEL GET-MASTER-ADDR-BY-NAME) before it connects,
 * and again after any failure: a failover moves the master.  The master
 * so found must say it is one (ROLE, in the handshake; see redis.c).
 *
 * The sentinels are asked staggered, as transport.c races a host's
 * addresses: the first at once, each next one STAGGER_MS later, or at
 * once when one before it fails; each on a connection of its own (a
 * struct redis too), at most AT_ONCE in flight, all within the lookup's
 * one deadline (--connect-timeout, as for any connect).  The first good
 * answer wins and the others are dropped.  So a sentinel that is frozen
 * (a hung host, a firewall that drops packets) costs STAGGER_MS, not the
 * whole --connect-timeout; and the sentinel that answered is asked first
 * next time.  A sentinel that does not know the master, answers wrongly,
 * refuses us, or names a server that is not a master (ROLE) or cannot be
 * reached sends rlock to the next; when none is left the one line names
 * each sentinel, as a sentinel URL, and what it did.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "log.h"
#include "redis-private.h"
#include "util.h"

/* How long one sentinel is waited on alone before the next is asked too. */
#define STAGGER_MS	100
/* How many sentinels are asked at once (each has its sockets: REDIS_MAX_FDS). */
#define AT_ONCE		(REDIS_MAX_FDS / TRANSPORT_MAX_FDS)

enum ask_state {
	ASK_NOT_YET,
	ASK_ASKING,
	ASK_FAILED,	/* why says what it did */
	ASK_NAMED,	/* its answer is being tried */
};

/* One sentinel, and what it did in this lookup. */
struct ask {
	enum ask_state	  state;
	struct redis	 *conn;
	struct url	  url;		/* its display is the sentinel URL */
	struct redis_opts opts;
	struct redis_req  req;
	const char	 *argv[3];
	int64_t		  started;
	enum err_kind	  kind;		/* of its failure */
	char		  why[160];	/* what it did, without its name */
};

struct sentinels {
	struct ask	*ask;
	int		 n;
	int		 home;		/* asked first: the last that answered */
	int		 named;		/* whose answer is tried; -1 none */
	int64_t		 next_at;	/* start one more then */
	int		 missing_pw;	/* one said NOAUTH, and we had none */
	int		 wrong_pw;	/* one refused our credentials */
	int		 hung_up;	/* plain text to a TLS sentinel */
};

/* "redis-sentinel://host:port" (or rediss-), as the user wrote it. */
static void
sentinel_display(struct url *su, const struct url *u, const char *host,
    int port)
{
	char	buf[300];

	snprintf(buf, sizeof buf, "%s://%s%s%s:%d",
	    u->tls ? "rediss-sentinel" : "redis-sentinel",
	    strchr(host, ':') != NULL ? "[" : "", host,
	    strchr(host, ':') != NULL ? "]" : "", port);
	free(su->display);
	su->display = xstrdup(buf);
}

static void
drop_ask(struct ask *a)
{
	redis_free(a->conn);
	a->conn = NULL;
}

/* Sentinel i is asked, on a connection of its own: 0, or -1 (e). */
static int
start_ask(struct redis *r, int i, struct err *e)
{
	struct sentinels	*s = r->sentinels;
	struct ask		*a = &s->ask[i];
	const struct url	*u = r->orig;
	int64_t			 left = r->connect_deadline - now_mono_ms();

	url_free(&a->url);
	/* rediss-sentinel://: TLS to the sentinel too, with the --tls-* files. */
	url_retarget(&a->url, u, u->sentinels[i].host, u->sentinels[i].port);
	secret_free(a->url.password);
	a->url.password = NULL;
	a->url.db = -1;
	a->opts = *r->opts;
	a->opts.password = NULL;
	a->opts.tls = u->tls ? r->opts->tls : NULL;
	a->opts.end_ms = 0;
	/*
	 * The sentinels' own credentials, when given, go first; else they get
	 * no password unless they ask (see answer()): the URL's userinfo is
	 * the master's.
	 */
	if (r->opts->sentinel_password != NULL) {
		free(a->url.user);
		a->url.user = r->opts->sentinel_user != NULL ?
		    xstrdup(r->opts->sentinel_user) : NULL;
		a->opts.password = r->opts->sentinel_password;
	}
	sentinel_display(&a->url, u, u->sentinels[i].host,
	    u->sentinels[i].port);
	a->opts.identify = 0;
	a->opts.check_version = 0;
	if (left < 1)
		left = 1;
	a->opts.connect_timeout_ms = left;
	if (a->opts.timeout_ms > left)
		a->opts.timeout_ms = left;
	a->argv[0] = "SENTINEL";
	a->argv[1] = "GET-MASTER-ADDR-BY-NAME";
	a->argv[2] = u->master;
	memset(&a->req, 0, sizeof a->req);
	a->req.argc = 3;
	a->req.argv = a->argv;
	a->conn = redis_new(&a->url, &a->opts);
	a->state = ASK_ASKING;
	a->started = now_mono_ms();
	return redis_start(a->conn, &a->req, e);
}

/*
 * Sentinel i failed as e says: what it did, in words without its own
 * name (the summary names it), and which remedy it calls for.
 */
static void
ask_failed(struct redis *r, int i, const struct err *e)
{
	struct sentinels	*s = r->sentinels;
	struct ask		*a = &s->ask[i];
	const char		*p = e->msg, *d = a->url.display;
	char			 t[32];
	size_t			 n = strlen(d);

	/* "cannot connect to URL: why" or "URL: why" -> "why". */
	if (strncmp(p, "cannot connect to ", 18) == 0 &&
	    strncmp(p + 18, d, n) == 0 && strncmp(p + 18 + n, ": ", 2) == 0)
		p += 18 + n + 2;
	else if (strncmp(p, d, n) == 0 && strncmp(p + n, ": ", 2) == 0)
		p += n + 2;
	if (e->kind == ERR_TIMEOUT)
		snprintf(a->why, sizeof a->why, "no answer within %s",
		    duration_format(now_mono_ms() - a->started, t, sizeof t));
	else
		snprintf(a->why, sizeof a->why, "%.150s", p);
	if (e->kind == ERR_AUTH) {
		if (strncmp(p, "NOAUTH", 6) == 0 && a->opts.password == NULL)
			s->missing_pw = 1;
		else
			s->wrong_pw = 1;
	}
	/* A TLS-only sentinel hangs up on plain text at once. */
	if (!r->orig->tls && e->kind == ERR_UNAVAILABLE &&
	    (strstr(p, "reset by peer") != NULL ||
	    strstr(p, "closed by the server") != NULL))
		s->hung_up = 1;
	a->kind = e->kind;
	a->state = ASK_FAILED;
	drop_ask(a);
	log_verbose("%s: %s; asking the next sentinel", d, a->why);
}

/*
 * Sentinel i's answer: 1 it named the master (r->target), 0 it was asked
 * again, -1 it failed (e filled).
 */
static int
answer(struct redis *r, int i, struct redis_reply *rr, struct err *e)
{
	struct ask		*a = &r->sentinels->ask[i];
	const struct url	*u = r->orig;
	const char		*pw = u->password ? u->password :
				    r->opts->password;
	struct url		 master;
	char			*end;
	long			 port;

	if (rr->type == REDIS_T_ERROR && strncmp(rr->str, "NOAUTH", 6) == 0 &&
	    pw != NULL && a->opts.password == NULL) {
		/* It wants a password after all: AUTH, and ask again. */
		a->opts.password = pw;
		a->conn->handshaken = 0;
		return redis_start(a->conn, &a->req, e) == -1 ? -1 : 0;
	}
	/* {host, port}, the port a number in range. */
	if (rr->type == REDIS_T_ARRAY && rr->elements == 2 &&
	    rr->element[0]->type == REDIS_T_STRING &&
	    rr->element[1]->type == REDIS_T_STRING &&
	    (port = strtol(rr->element[1]->str, &end, 10)) > 0 &&
	    port <= 65535 && *end == '\0') {
		url_retarget(&master, u, rr->element[0]->str, (int)port);
		url_free(&r->target);
		r->target = master;
		r->url = &r->target;
		return 1;
	}
	if (rr->type == REDIS_T_ERROR && (strncmp(rr->str, "NOAUTH", 6) == 0 ||
	    strncmp(rr->str, "WRONGPASS", 9) == 0)) {
		err_set(e, ERR_AUTH, "%s", rr->str);
		return -1;
	}
	err_set(e, ERR_REPLY, "does not know master '%s'%s%s", u->master,
	    rr->type == REDIS_T_ERROR ? ": " : "",
	    rr->type == REDIS_T_ERROR ? rr->str : "");
	return -1;
}

/*
 * The kind of the lookup's failure: credentials or TLS refused (which
 * waiting does not mend) over a sentinel or master away for a while (a
 * failover: -w rides it) over an answer that does not help.
 */
static int
kind_rank(enum err_kind k)
{
	switch (k) {
	case ERR_AUTH:
		return 4;
	case ERR_PROTOCOL:
	case ERR_USAGE:
		return 3;
	case ERR_UNAVAILABLE:
	case ERR_TIMEOUT:
	case ERR_REFUSED:
		return 2;
	default:
		return 1;
	}
}

/*
 * None is left, or the lookup's time ran out: one line that names each
 * sentinel and what it did, those that did the same together, and the
 * remedy.  Those still asked are given up.
 */
void
sentinel_summary(struct redis *r, struct err *e)
{
	struct sentinels	*s = r->sentinels;
	struct buf		 b;
	enum err_kind		 kind = ERR_REPLY;
	int			 i, j, k, m, *told;
	char			 t[32];

	told = xcalloc(s->n, sizeof *told);
	for (i = 0; i < s->n; i++)
		if (s->ask[i].state == ASK_ASKING ||
		    s->ask[i].state == ASK_NOT_YET) {
			snprintf(s->ask[i].why, sizeof s->ask[i].why,
			    s->ask[i].state == ASK_ASKING ? "no answer "
			    "within %s" : "not asked: no time left",
			    duration_format(now_mono_ms() - s->ask[i].started,
			    t, sizeof t));
			s->ask[i].kind = ERR_TIMEOUT;
			drop_ask(&s->ask[i]);
			s->ask[i].state = ASK_FAILED;
		}
	for (i = 0; i < s->n; i++)
		if (kind_rank(s->ask[i].kind) > kind_rank(kind))
			kind = kind_rank(s->ask[i].kind) == 2 ? ERR_UNAVAILABLE :
			    s->ask[i].kind;
	buf_init(&b);
	buf_printf(&b, "no sentinel said where master '%s' is:",
	    r->orig->master);
	for (i = 0; i < s->n; i++) {
		if (told[i])
			continue;
		for (j = i, m = 0; j < s->n; j++)
			m += !told[j] && strcmp(s->ask[j].why, s->ask[i].why) == 0;
		for (j = i, k = 0; j < s->n; j++) {
			if (told[j] || strcmp(s->ask[j].why, s->ask[i].why) != 0)
				continue;
			told[j] = 1;
			buf_printf(&b, "%s%s", k == 0 ? (i == 0 ? " " : "; ") :
			    k + 1 == m ? " and " : ", ", s->ask[j].url.display);
			k++;
		}
		buf_printf(&b, ": %s", s->ask[i].why);
	}
	free(told);
	if (s->missing_pw)
		buf_printf(&b, " (give the sentinels' password with "
		    "--sentinel-password-file or RLOCK_SENTINEL_PASSWORD)");
	else if (s->wrong_pw && r->opts->sentinel_password == NULL)
		buf_printf(&b, " (they were sent the master's password; give "
		    "the sentinels' own with --sentinel-password-file or "
		    "RLOCK_SENTINEL_PASSWORD)");
	else if (s->wrong_pw && r->opts->sentinel_user == NULL)
		buf_printf(&b, " (if the sentinels have ACL users, name one "
		    "with --sentinel-user; else check the sentinels' password)");
	else if (s->wrong_pw)
		buf_printf(&b, " (check --sentinel-user and the sentinels' "
		    "password)");
	if (s->hung_up)
		buf_printf(&b, " (if the sentinels speak TLS, use "
		    "rediss-sentinel://)");
	err_set(e, kind, "%s", b.p);
	buf_free(&b);
}

/* The next sentinel not yet asked, from home on; -1 none. */
static int
next_unasked(const struct sentinels *s)
{
	int	i, k;

	for (k = 0; k < s->n; k++) {
		i = (s->home + k) % s->n;
		if (s->ask[i].state == ASK_NOT_YET)
			return i;
	}
	return -1;
}

static int
count(const struct sentinels *s, enum ask_state st)
{
	int	i, n = 0;

	for (i = 0; i < s->n; i++)
		n += s->ask[i].state == st;
	return n;
}

void
sentinel_begin(struct redis *r)
{
	struct sentinels	*s = r->sentinels;
	int			 i;

	if (s == NULL) {
		s = r->sentinels = xcalloc(1, sizeof *s);
		s->n = r->orig->nsentinels;
		s->ask = xcalloc(s->n, sizeof *s->ask);
	}
	sentinel_stop(r);
	for (i = 0; i < s->n; i++) {
		s->ask[i].state = ASK_NOT_YET;
		s->ask[i].why[0] = '\0';
		s->ask[i].kind = ERR_NONE;
		s->ask[i].started = now_mono_ms();
	}
	s->named = -1;
	s->next_at = 0;
	s->missing_pw = s->wrong_pw = s->hung_up = 0;
	r->state = RESOLVING;
}

void
sentinel_stop(struct redis *r)
{
	int	i;

	if (r->sentinels == NULL)
		return;
	/* Those dropped before they answered are asked again next time. */
	for (i = 0; i < r->sentinels->n; i++) {
		drop_ask(&r->sentinels->ask[i]);
		if (r->sentinels->ask[i].state == ASK_ASKING)
			r->sentinels->ask[i].state = ASK_NOT_YET;
	}
}

void
sentinel_free(struct redis *r)
{
	int	i;

	if (r->sentinels == NULL)
		return;
	sentinel_stop(r);
	for (i = 0; i < r->sentinels->n; i++)
		url_free(&r->sentinels->ask[i].url);
	free(r->sentinels->ask);
	free(r->sentinels);
	r->sentinels = NULL;
}

/*
 * One step of the lookup: start who is due, step who is asked, take the
 * first good answer.  1 with the transport to the master under way, 0
 * pending, -1 (e filled) when none could say.
 */
int
sentinel_step(struct redis *r, struct err *e)
{
	struct sentinels	*s = r->sentinels;
	struct redis_reply	*rr;
	struct err		 se;
	int			 i, rc;

	for (;;) {
		/* Start one more: the first, one due, or one for each failed. */
		while (count(s, ASK_ASKING) < AT_ONCE &&
		    (i = next_unasked(s)) >= 0 && (count(s, ASK_ASKING) == 0 ||
		    now_mono_ms() >= s->next_at)) {
			s->next_at = now_mono_ms() + STAGGER_MS;
			err_clear(&se);
			if (start_ask(r, i, &se) == -1)
				ask_failed(r, i, &se);
		}
		if (count(s, ASK_ASKING) == 0) {
			sentinel_summary(r, e);
			return -1;
		}
		for (i = 0; i < s->n; i++) {
			if (s->ask[i].state != ASK_ASKING)
				continue;
			err_clear(&se);
			if ((rc = redis_step(s->ask[i].conn, &se)) == 0)
				continue;
			if (se.kind == ERR_INTERRUPTED) {
				*e = se;
				return -1;
			}
			if (rc == 1) {
				rr = redis_take(s->ask[i].conn);
				rc = answer(r, i, rr, &se);
				redis_reply_free(rr);
				if (rc == 0)
					continue;
			}
			if (rc == -1) {
				ask_failed(r, i, &se);
				/* The next is asked at once. */
				s->next_at = 0;
				break;
			}
			/* Named: the others are dropped; this one is home. */
			s->ask[i].state = ASK_NAMED;
			s->named = s->home = i;
			sentinel_stop(r);
			r->check_role = 1;
			return redis_open_transport(r, e) == -1 ? -1 : 1;
		}
		if (i == s->n)
			return 0;
	}
}

/*
 * The master the sentinel named is no good (e says why: not a master,
 * cannot be reached): the sentinel is marked with it, and the lookup goes
 * on with those not yet asked.  0 it does (the connection to the master
 * dropped, r RESOLVING), -1 none is left (e: the summary).
 */
int
sentinel_refused(struct redis *r, struct err *e)
{
	struct sentinels	*s = r->sentinels;
	struct ask		*a;
	const char		*p;

	if (s == NULL || s->named < 0 || e->kind == ERR_INTERRUPTED ||
	    e->kind == ERR_USAGE)
		return -1;
	a = &s->ask[s->named];
	p = strstr(r->url->display, "://");
	p = p != NULL ? p + 3 : r->url->display;
	if (strstr(e->msg, "it is not a master") != NULL)
		snprintf(a->why, sizeof a->why, "named %s, which is not a "
		    "master (a failover may be under way)", p);
	else
		snprintf(a->why, sizeof a->why, "named %s, which cannot be "
		    "reached: %.80s", p, e->msg);
	a->kind = e->kind == ERR_REPLY ? ERR_UNAVAILABLE : e->kind;
	a->state = ASK_FAILED;
	/* Not the one to ask first next time. */
	if (s->home == s->named)
		s->home = (s->named + 1) % s->n;
	s->named = -1;
	log_verbose("%s: %s; asking the next sentinel", a->url.display,
	    a->why);
	redis_drop_connection(r);
	r->url = r->orig;
	r->check_role = 0;
	r->handshaken = 0;
	r->state = RESOLVING;
	s->next_at = 0;
	if (next_unasked(s) >= 0 && now_mono_ms() < r->connect_deadline)
		return 0;
	sentinel_summary(r, e);
	return -1;
}

int
sentinel_pollfds(const struct redis *r, struct pollfd *pfd)
{
	const struct sentinels	*s = r->sentinels;
	int			 i, n = 0;

	for (i = 0; s != NULL && i < s->n; i++)
		if (s->ask[i].state == ASK_ASKING &&
		    n + TRANSPORT_MAX_FDS <= REDIS_MAX_FDS)
			n += redis_pollfds(s->ask[i].conn, pfd + n);
	return n;
}

int64_t
sentinel_wake(const struct redis *r)
{
	const struct sentinels	*s = r->sentinels;
	int64_t			 w = -1, x;
	int			 i;

	if (s == NULL)
		return now_mono_ms();
	if (next_unasked(s) >= 0 && count(s, ASK_ASKING) < AT_ONCE)
		w = s->next_at;
	for (i = 0; i < s->n; i++) {
		if (s->ask[i].state != ASK_ASKING)
			continue;
		x = redis_wake(s->ask[i].conn);
		if (x < 0 || redis_deadline(s->ask[i].conn) < x)
			x = redis_deadline(s->ask[i].conn);
		if (w < 0 || x < w)
			w = x;
	}
	return w;
}
