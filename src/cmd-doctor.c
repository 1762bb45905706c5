/* cmd-doctor.c: rlock doctor: check the servers for settings that break locks. */

/*
 * Each configured server is asked on its own connection (not as a
 * quorum: the point is to see each one), and every finding is one line:
 * its severity, the server, what was found, and what to do about it.
 * Exit 0 when nothing is wrong, 1 when something should be fixed, 69 when
 * a server cannot be reached at all.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "duration.h"
#include "log.h"
#include "output.h"
#include "redis.h"
#include "util.h"

static int	cmd_doctor_exec(struct cmd_ctx *);

const struct cmd_entry cmd_doctor_entry = {
	.name = "doctor",
	.args = "",
	.summary = "Check the servers for settings that break locks",
	.options = 0,
	.min_args = 0,
	.max_args = 0,
	.exec = cmd_doctor_exec,
};

enum severity { SEV_OK, SEV_INFO, SEV_WARN, SEV_ERROR };

static const char *const sev_name[] = {
	[SEV_OK] = "ok", [SEV_INFO] = "info", [SEV_WARN] = "warning",
	[SEV_ERROR] = "error",
};

struct report {
	struct buf	 out;
	int		 json;
	int		 n;
	enum severity	 worst;
};

static void
finding(struct report *rp, const char *server, const char *check,
    enum severity sev, const char *remedy, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void
finding(struct report *rp, const char *server, const char *check,
    enum severity sev, const char *remedy, const char *fmt, ...)
{
	char	msg[512];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (sev > rp->worst)
		rp->worst = sev;
	if (rp->json) {
		buf_adds(&rp->out, rp->n++ ? ",\n{\"server\":" : "{\"server\":");
		json_string(&rp->out, server, strlen(server));
		buf_printf(&rp->out, ",\"check\":\"%s\",\"severity\":\"%s\","
		    "\"message\":", check, sev_name[sev]);
		json_string(&rp->out, msg, strlen(msg));
		buf_adds(&rp->out, ",\"remedy\":");
		if (remedy != NULL)
			json_string(&rp->out, remedy, strlen(remedy));
		else
			buf_adds(&rp->out, "null");
		buf_adds(&rp->out, "}");
		return;
	}
	buf_printf(&rp->out, "%-8s %s: %s: %s", sev_name[sev], server, check,
	    msg);
	if (remedy != NULL)
		buf_printf(&rp->out, " (%s)", remedy);
	buf_adds(&rp->out, "\n");
}

/* The value of "field:" in an INFO reply, copied into buf; NULL if absent. */
static const char *
info_field(const char *info, const char *field, char *buf, size_t len)
{
	const char	*p = info;
	size_t		 flen = strlen(field), n;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
			p += flen + 1;
			n = strcspn(p, "\r\n");
			snprintf(buf, len, "%.*s", (int)n, p);
			return buf;
		}
		if ((p = strchr(p, '\n')) != NULL)
			p++;
	}
	return NULL;
}

static char *
info(struct redis *r, const char *section, struct err *e)
{
	struct redis_reply	*rr;
	char			*s;

	if ((rr = redis_commandv(r, e, "INFO", section, NULL)) == NULL)
		return NULL;
	s = rr->type == REDIS_T_STRING ? xstrdup(rr->str) : xstrdup("");
	redis_reply_free(rr);
	return s;
}

/* 0, or -1 when the server cannot be used at all (refused, NOAUTH). */
static int
check_rtt(struct report *rp, struct redis *r, const char *server)
{
	struct redis_reply	*rr;
	struct err		 e;
	int64_t			 best = -1, t;
	char			 d[32];
	int			 i;

	for (i = 0; i < 5; i++) {
		t = now_mono_ms();
		/* Millisecond clock: many pings together give a finer mean. */
		if ((rr = redis_commandv(r, &e, "PING", NULL)) == NULL)
			break;
		redis_reply_free(rr);
		t = now_mono_ms() - t;
		if (best < 0 || t < best)
			best = t;
	}
	if (best < 0) {
		finding(rp, server, "reachable", SEV_ERROR, NULL, "%s", e.msg);
		return -1;
	}
	else
		finding(rp, server, "reachable", best > 50 ? SEV_WARN : SEV_OK,
		    best > 50 ? "a slow round trip eats into every lock's "
		    "validity; use a nearby server or a longer --ttl" : NULL,
		    "round trip %s", best == 0 ? "under 1ms" :
		    duration_format(best, d, sizeof d));
	return 0;
}

static int
check_server(struct report *rp, struct redis *r, const char *server)
{
	struct redis_reply	*rr;
	struct err		 e;
	char			*srv = NULL, *mem = NULL, *pers = NULL;
	char			*repl = NULL, *clu = NULL, v[128], v2[128];
	char			 key[32];
	int			 major = 0, n, i;

	if (check_rtt(rp, r, server) == -1)
		return -1;
	if ((srv = info(r, "server", &e)) == NULL) {
		finding(rp, server, "info", SEV_ERROR, "allow INFO for this "
		    "user, or doctor cannot see the settings", "%s", e.msg);
		return 0;
	}
	if (info_field(srv, "redis_version", v, sizeof v) != NULL) {
		major = atoi(v);
		finding(rp, server, "version", major < 6 ? SEV_ERROR : SEV_OK,
		    major < 6 ? "rlock needs Redis 6.0 or later (fractional "
		    "BLPOP timeouts, ACL users)" : NULL, "Redis %s", v);
	}

	repl = info(r, "replication", &e);
	if (repl != NULL && info_field(repl, "role", v, sizeof v) != NULL) {
		if (strcmp(v, "master") == 0)
			finding(rp, server, "role", SEV_OK, NULL, "master");
		else
			finding(rp, server, "role", SEV_ERROR, "point rlock "
			    "at the master, or use a redis-sentinel:// URL",
			    "%s: a replica cannot hold locks", v);
		n = info_field(repl, "connected_slaves", v, sizeof v) ?
		    atoi(v) : 0;
		finding(rp, server, "replicas", n == 0 ? SEV_INFO : SEV_OK,
		    n == 0 ? "without a replica a lost server loses its locks; "
		    "with one, --wait-replicas narrows the failover window" :
		    NULL, "%d connected", n);
		for (i = 0; i < n && i < 16; i++) {
			snprintf(key, sizeof key, "slave%d", i);
			if (info_field(repl, key, v, sizeof v) == NULL)
				continue;
			if (strstr(v, "lag=") != NULL &&
			    atoi(strstr(v, "lag=") + 4) > 1)
				finding(rp, server, "replica lag",
				    SEV_WARN, "a failover now would lose "
				    "recent locks; check the replica's link",
				    "%s", v);
		}
	}

	mem = info(r, "memory", &e);
	if (mem != NULL &&
	    info_field(mem, "maxmemory_policy", v, sizeof v) != NULL) {
		info_field(mem, "maxmemory", v2, sizeof v2);
		if (strcmp(v, "noeviction") == 0 || strcmp(v2, "0") == 0)
			finding(rp, server, "eviction", SEV_OK, NULL,
			    "maxmemory-policy %s%s", v, strcmp(v2, "0") == 0 &&
			    strcmp(v, "noeviction") != 0 ?
			    " with no maxmemory" : "");
		else
			finding(rp, server, "eviction", strncmp(v, "volatile",
			    8) == 0 ? SEV_ERROR : SEV_WARN,
			    "set maxmemory-policy noeviction: an evicted lock "
			    "key lets a second holder in",
			    "maxmemory-policy %s", v);
	}

	pers = info(r, "persistence", &e);
	if (pers != NULL &&
	    info_field(pers, "aof_enabled", v, sizeof v) != NULL) {
		if (strcmp(v, "1") != 0)
			finding(rp, server, "persistence", SEV_WARN,
			    "enable appendonly yes (appendfsync everysec or "
			    "always), or keep a restarted server out for a "
			    "TTL: a restart forgets the locks it held",
			    "appendonly no");
		else {
			rr = redis_commandv(r, &e, "CONFIG", "GET",
			    "appendfsync", NULL);
			if (rr != NULL && rr->type == REDIS_T_ARRAY &&
			    rr->elements == 2)
				finding(rp, server, "persistence",
				    strcmp(rr->element[1]->str, "no") == 0 ?
				    SEV_WARN : SEV_OK,
				    strcmp(rr->element[1]->str, "no") == 0 ?
				    "set appendfsync everysec or always" : NULL,
				    "appendonly yes, appendfsync %s",
				    rr->element[1]->str);
			else
				finding(rp, server, "persistence", SEV_OK,
				    NULL, "appendonly yes");
			redis_reply_free(rr);
		}
	}

	clu = info(r, "cluster", &e);
	if (clu != NULL && info_field(clu, "cluster_enabled", v, sizeof v) &&
	    strcmp(v, "1") == 0)
		finding(rp, server, "cluster", SEV_INFO, NULL, "cluster mode: "
		    "each lock's keys share a {NAME} hash tag; MOVED/ASK are "
		    "followed");

	rr = redis_commandv(r, &e, "EVAL", "return 1", "0", NULL);
	if (rr == NULL)
		finding(rp, server, "scripts", SEV_ERROR, "grant this user "
		    "+@scripting (EVAL, EVALSHA) and the lock keys (~rlock:*)",
		    "cannot run scripts: %s", e.msg);
	else
		finding(rp, server, "scripts", SEV_OK, NULL, "EVAL allowed");
	redis_reply_free(rr);
	free(srv);
	free(mem);
	free(pers);
	free(repl);
	free(clu);
	return 0;
}

static int
cmd_doctor_exec(struct cmd_ctx *ctx)
{
	struct report	 rp;
	struct redis	*r;
	struct err	 e;
	int		 i, unreachable = 0, rc;

	memset(&rp, 0, sizeof rp);
	rp.json = ctx->o.json;
	buf_init(&rp.out);
	if (rp.json)
		buf_adds(&rp.out, "[");
	for (i = 0; i < ctx->nurls; i++) {
		err_clear(&e);
		if ((r = redis_connect(&ctx->urls[i], &ctx->ropts, &e)) == NULL) {
			finding(&rp, ctx->urls[i].display, "reachable",
			    SEV_ERROR, "check the URL, the network and the "
			    "credentials", "%s", e.msg);
			unreachable++;
			continue;
		}
		if (check_server(&rp, r, ctx->urls[i].display) == -1)
			unreachable++;
		redis_close(r);
	}
	if (rp.json)
		buf_adds(&rp.out, "]\n");
	rc = output_flush(&rp.out) == -1 ? EXIT_SOFTWARE :
	    unreachable ? EXIT_UNAVAILABLE : rp.worst >= SEV_WARN ? 1 : 0;
	if (rc == EXIT_UNAVAILABLE)
		log_error("doctor: %d of %d server%s could not be reached or "
		    "used (see the error findings above)", unreachable,
		    ctx->nurls, ctx->nurls == 1 ? "" : "s");
	buf_free(&rp.out);
	return rc;
}
