/* sentinel.c: where the sentinels of a redis-sentinel:// URL say the master is. */

/*
 * A struct redis for a redis-sentinel:// URL asks the sentinels for the
 * master's address (SENTINEL GET-MASTER-ADDR-BY-NAME) before it connects,
 * each sentinel on a connection of its own (a struct redis too), and
 * again after any failure: a failover moves the master.  The master so
 * found must say it is one (ROLE, in the handshake; see redis.c).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis-private.h"
#include "util.h"

/* Ask sentinel r->sentinel where the master is, on a connection of its own. */
static int
ask_sentinel(struct redis *r, struct err *e)
{
	const struct url	*u = r->orig;
	int64_t			 left = r->connect_deadline - now_mono_ms();

	url_free(&r->sub_url);
	/* rediss-sentinel://: TLS to the sentinel too, with the --tls-* files. */
	url_retarget(&r->sub_url, u, u->sentinels[r->sentinel].host,
	    u->sentinels[r->sentinel].port);
	secret_free(r->sub_url.password);
	r->sub_url.password = NULL;
	r->sub_url.db = -1;
	r->sub_opts = *r->opts;
	r->sub_opts.password = NULL;
	r->sub_opts.tls = u->tls ? r->opts->tls : NULL;
	/*
	 * The sentinels' own credentials, when given, go first; else they get
	 * no password unless they ask (sentinel_answer): the URL's userinfo
	 * is the master's.
	 */
	if (r->opts->sentinel_password != NULL) {
		free(r->sub_url.user);
		r->sub_url.user = r->opts->sentinel_user != NULL ?
		    xstrdup(r->opts->sentinel_user) : NULL;
		url_build_display(&r->sub_url);
		r->sub_opts.password = r->opts->sentinel_password;
	}
	r->sub_opts.identify = 0;
	r->sub_opts.check_version = 0;
	if (left < 1)
		left = 1;
	r->sub_opts.connect_timeout_ms = left;
	if (r->sub_opts.timeout_ms > left)
		r->sub_opts.timeout_ms = left;
	r->sub_argv[0] = "SENTINEL";
	r->sub_argv[1] = "GET-MASTER-ADDR-BY-NAME";
	r->sub_argv[2] = u->master;
	memset(&r->sub_req, 0, sizeof r->sub_req);
	r->sub_req.argc = 3;
	r->sub_req.argv = r->sub_argv;
	r->sub = redis_new(&r->sub_url, &r->sub_opts);
	return redis_start(r->sub, &r->sub_req, e);
}

/* The sentinel's answer: 1 the master is known, 0 ask again, -1 this one failed. */
static int
sentinel_answer(struct redis *r, struct redis_reply *rr, struct err *e)
{
	const struct url	*u = r->orig;
	const char		*pw = u->password ? u->password :
				    r->opts->password;
	struct url		 master;
	char			*end;
	long			 port;

	if (rr->type == REDIS_T_ERROR && strncmp(rr->str, "NOAUTH", 6) == 0 &&
	    pw != NULL && r->sub_opts.password == NULL) {
		/* It wants a password after all: AUTH, and ask again. */
		r->sub_opts.password = pw;
		r->sub->handshaken = 0;
		return redis_start(r->sub, &r->sub_req, e) == -1 ? -1 : 0;
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
		err_set(e, ERR_AUTH, "sentinel %s: %s (give the sentinels' "
		    "password with --sentinel-password-file or "
		    "RLOCK_SENTINEL_PASSWORD)", r->sub_url.display, rr->str);
		return -1;
	}
	err_set(e, ERR_REPLY, "sentinel %s does not know master '%s'%s%s",
	    r->sub_url.display, u->master,
	    rr->type == REDIS_T_ERROR ? ": " : "",
	    rr->type == REDIS_T_ERROR ? rr->str : "");
	return -1;
}

/*
 * One step of the Sentinel lookup: the sentinels are asked in order, each
 * within what is left of the connect time.  1 with the transport to the
 * master under way, 0 pending, -1 (e filled) when none could say.
 */
int
sentinel_step(struct redis *r, struct err *e)
{
	struct redis_reply	*rr;
	char			 msg[sizeof r->sub_err.msg];
	int			 rc;

	for (;;) {
		if (r->sub == NULL && ask_sentinel(r, &r->sub_err) == -1)
			rc = -1;
		else if ((rc = redis_step(r->sub, &r->sub_err)) == 0)
			return 0;
		if (rc == 1) {
			rr = redis_take(r->sub);
			rc = sentinel_answer(r, rr, &r->sub_err);
			redis_reply_free(rr);
			if (rc == 0)
				continue;
		}
		/* Each sentinel has what is left of the connect's time. */
		if (rc == -1 && r->sub_err.kind == ERR_TIMEOUT)
			err_set(&r->sub_err, ERR_TIMEOUT, "sentinel %s did not "
			    "answer within the --connect-timeout",
			    r->sub_url.display);
		/* A sentinel that refuses what it was sent: say which. */
		if (rc == -1 && r->sub_err.kind == ERR_AUTH &&
		    strstr(r->sub_err.msg, "RLOCK_SENTINEL_PASSWORD") == NULL) {
			snprintf(msg, sizeof msg, "%s", r->sub_err.msg);
			err_set(&r->sub_err, ERR_AUTH, "sentinel %.320s (it was "
			    "sent the %s password; give the sentinels' own with "
			    "--sentinel-password-file or RLOCK_SENTINEL_PASSWORD)",
			    msg, r->opts->sentinel_password != NULL ?
			    "sentinels'" : "master's");
		}
		/* A TLS-only sentinel hangs up on plain text at once. */
		if (rc == -1 && !r->orig->tls &&
		    r->sub_err.kind == ERR_UNAVAILABLE &&
		    (strstr(r->sub_err.msg, "reset by peer") != NULL ||
		    strstr(r->sub_err.msg, "closed by the server") != NULL)) {
			snprintf(msg, sizeof msg, "%s", r->sub_err.msg);
			err_set(&r->sub_err, ERR_UNAVAILABLE, "%.400s (if the "
			    "sentinels speak TLS, use rediss-sentinel://)",
			    msg);
		}
		redis_free(r->sub);
		r->sub = NULL;
		if (rc == 1) {
			url_free(&r->sub_url);
			r->check_role = 1;
			return redis_open_transport(r, e) == -1 ? -1 : 1;
		}
		if (r->sub_err.kind == ERR_INTERRUPTED ||
		    ++r->sentinel >= r->orig->nsentinels) {
			*e = r->sub_err;
			return -1;
		}
	}
}
