/* cmd-doctor.c: rlock doctor: check the servers for settings that break locks. */

/*
 * Each configured server is asked on its own connection (not as a
 * quorum: the point is to see each one), and every finding is one line:
 * its severity, the server, what was found, and what to do about it.
 * Exit 0 when nothing is wrong, 1 when something should be fixed, 69 when
 * a server cannot be reached at all.  The checks are here, but for the
 * ACL's (which commands the user may run: doctor-acl.c, which changes
 * with the commands the scripts call); doctor.h is the report they share.
 */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "doctor.h"
#include "history.h"
#include "duration.h"
#include "escape.h"
#include "log.h"
#include "json.h"
#include "output.h"
#include "scripts.h"
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

/* Memory figures INFO gives are bounded to this before any arithmetic. */
#define DOCTOR_MAX_BYTES	(1ULL << 50)

static const char *const sev_name[] = {
	[SEV_OK] = "ok", [SEV_INFO] = "info", [SEV_WARN] = "warning",
	[SEV_ERROR] = "error",
};

void
doctor_finding(struct report *rp, const char *server, const char *check,
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
		json_object_begin(&rp->j);
		json_key(&rp->j, "server");
		json_str(&rp->j, server);
		json_key(&rp->j, "check");
		json_str(&rp->j, check);
		json_key(&rp->j, "severity");
		json_str(&rp->j, sev_name[sev]);
		json_key(&rp->j, "message");
		json_str(&rp->j, msg);
		json_key(&rp->j, "remedy");
		json_str(&rp->j, remedy);	/* NULL: null */
		json_object_end(&rp->j);
		return;
	}
	/* The message may quote a server, a key or a URL: escaped. */
	buf_printf(&rp->out, "%-8s ", sev_name[sev]);
	escape_adds(&rp->out, server);
	buf_printf(&rp->out, ": %s: ", check);
	escape_adds(&rp->out, msg);
	if (remedy != NULL) {
		buf_adds(&rp->out, " (");
		escape_adds(&rp->out, remedy);
		buf_adds(&rp->out, ")");
	}
	buf_adds(&rp->out, "\n");
}

/*
 * A reply of a shape Redis never gives to what was asked: an error finding,
 * and the server counts as one that cannot be used (exit 69).  Read as an
 * answer, it would pass for a setting that is fine.
 */
void
doctor_wrong_shape(struct report *rp, const char *server, const char *check,
    const char *what, const struct redis_reply *rr)
{
	rp->broken = 1;
	doctor_finding(rp, server, check, SEV_ERROR, NULL, "%s was answered with %s "
	    "of a shape Redis never gives; is it a Redis server, with nothing "
	    "in between?", what, quorum_reply_kind(rr));
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

/* INFO section: its text, or NULL (e filled; a wrong shape: found). */
static char *
info(struct report *rp, struct quorum *q, const char *server,
    const char *section, struct err *e)
{
	struct redis_reply	*rr;
	char			*s = NULL;

	err_clear(e);
	if ((rr = quorum_callv(q, 0, e, "INFO", section, NULL)) == NULL)
		return NULL;
	if (rr->type == REDIS_T_STRING)
		s = xstrdup(rr->str);
	else {
		doctor_wrong_shape(rp, server, "info", "INFO", rr);
		err_set(e, ERR_PROTOCOL, "a wrong shape");
	}
	redis_reply_free(rr);
	return s;
}

/*
 * CONFIG GET name: {name, value}, or {} where it is not known; NULL on
 * a failure or a refusal, and on a wrong shape (found).
 */
static struct redis_reply *
config_get(struct report *rp, struct quorum *q, const char *server,
    const char *check, const char *name)
{
	struct redis_reply	*rr;
	struct err		 e;

	if ((rr = quorum_callv(q, 0, &e, "CONFIG", "GET", name, NULL)) == NULL)
		return NULL;
	if (rr->type == REDIS_T_ARRAY && (rr->elements == 0 ||
	    (rr->elements == 2 && rr->element[0]->type == REDIS_T_STRING &&
	    rr->element[1]->type == REDIS_T_STRING)))
		return rr;
	doctor_wrong_shape(rp, server, check, "CONFIG GET", rr);
	redis_reply_free(rr);
	return NULL;
}

/*
 * An error reply that says the ACL stands in the way (Redis 6 and 7 word
 * it differently in and out of scripts), or that the command was renamed
 * away.
 */
int
doctor_refused(const char *err)
{
	return strncmp(err, "NOPERM", 6) == 0 ||
	    strstr(err, "can't run this command") != NULL ||
	    strstr(err, "can't access") != NULL ||
	    strstr(err, "no permissions") != NULL ||
	    strstr(err, "nknown command") != NULL ||
	    strstr(err, "nknown Redis command") != NULL;
}

/* Send argv and wait: the reply, an error reply too; NULL on a failure. */
struct redis_reply *
doctor_ask(struct quorum *q, int argc, const char **argv, struct err *e)
{
	return quorum_ask(q, 0, e, argc, argv);
}

/* 0, or -1 when the server cannot be used at all (refused, NOAUTH). */
static int
check_rtt(struct report *rp, struct quorum *q, const char *server)
{
	struct redis_reply	*rr;
	struct err		 e;
	const char		*ping[] = { "PING" };
	int64_t			 best = -1, t;
	char			 d[32];
	int			 i;

	for (i = 0; i < 5; i++) {
		t = now_mono_ms();
		/* Millisecond clock: many pings together give a finer mean. */
		if ((rr = doctor_ask(q, 1, ping, &e)) == NULL)
			break;
		/* Refused by the ACL, it still went there and back. */
		if (rr->type == REDIS_T_ERROR && !doctor_refused(rr->str)) {
			redis_reply_free(rr);
			break;
		}
		if (rr->type != REDIS_T_ERROR && (rr->type != REDIS_T_STATUS ||
		    strcmp(rr->str, "PONG") != 0)) {
			doctor_wrong_shape(rp, server, "reachable", "PING", rr);
			redis_reply_free(rr);
			return -1;
		}
		redis_reply_free(rr);
		t = now_mono_ms() - t;
		if (best < 0 || t < best)
			best = t;
	}
	if (best < 0) {
		/* The first PING makes the connection: say what to check. */
		doctor_finding(rp, server, "reachable", SEV_ERROR, i == 0 ? "check the "
		    "URL, the network and the credentials" : NULL, "%s", e.msg);
		return -1;
	}
	else
		doctor_finding(rp, server, "reachable", best > 50 ? SEV_WARN : SEV_OK,
		    best > 50 ? "a slow round trip eats into every lock's "
		    "validity; use a nearby server or a longer --ttl" : NULL,
		    "round trip %s", best == 0 ? "under 1ms" :
		    duration_format(best, d, sizeof d));
	return 0;
}

/*
 * What INFO shows: version, role, replicas, eviction, persistence, cluster
 * mode (*cluster set to 1).  Nothing but the info finding when INFO is
 * refused.
 */
/* INFO replication: the role, the replicas and their lag. */
static void
check_replication(struct report *rp, struct quorum *q, const char *server)
{
	struct err	 e;
	char		*repl, v[128], key[32];
	int		 n, i;

	if ((repl = info(rp, q, server, "replication", &e)) == NULL ||
	    info_field(repl, "role", v, sizeof v) == NULL) {
		free(repl);
		return;
	}
	if (strcmp(v, "master") == 0)
		doctor_finding(rp, server, "role", SEV_OK, NULL, "master");
	else
		doctor_finding(rp, server, "role", SEV_ERROR, "point rlock at the "
		    "master, or use a redis-sentinel:// URL",
		    "%s: a replica cannot hold locks", v);
	n = info_field(repl, "connected_slaves", v, sizeof v) ? atoi(v) : 0;
	doctor_finding(rp, server, "replicas", n == 0 ? SEV_INFO : SEV_OK,
	    n == 0 ? "without a replica a lost server loses its locks; "
	    "with one, --wait-replicas narrows the failover window" :
	    NULL, "%d connected", n);
	for (i = 0; i < n && i < 16; i++) {
		snprintf(key, sizeof key, "slave%d", i);
		if (info_field(repl, key, v, sizeof v) == NULL)
			continue;
		if (strstr(v, "lag=") != NULL &&
		    atoi(strstr(v, "lag=") + 4) > 1)
			doctor_finding(rp, server, "replica lag", SEV_WARN,
			    "a failover now would lose recent locks; check "
			    "the replica's link", "%s", v);
	}
	free(repl);
}

/*
 * Used memory against maxmemory (when there is one): near it, a server
 * with noeviction refuses every write, so acquires fail, and one with an
 * eviction policy starts dropping keys.
 */
static void
check_memory(struct report *rp, const char *server, const char *mem,
    const char *policy)
{
	char			 v[64], used_h[32] = "?", max_h[32] = "?";
	unsigned long long	 used, max;

	if (info_field(mem, "maxmemory", v, sizeof v) == NULL ||
	    (max = strtoull(v, NULL, 10)) == 0 ||
	    info_field(mem, "used_memory", v, sizeof v) == NULL)
		return;
	used = strtoull(v, NULL, 10);
	/* Bounded before the arithmetic below: 2^50 bytes is a petabyte. */
	used = used > DOCTOR_MAX_BYTES ? DOCTOR_MAX_BYTES : used;
	max = max > DOCTOR_MAX_BYTES ? DOCTOR_MAX_BYTES : max;
	info_field(mem, "used_memory_human", used_h, sizeof used_h);
	info_field(mem, "maxmemory_human", max_h, sizeof max_h);
	doctor_finding(rp, server, "memory", used * 10 > max * 9 ? SEV_WARN : SEV_OK,
	    used * 10 <= max * 9 ? NULL : strcmp(policy, "noeviction") == 0 ?
	    "at the limit every write is refused: acquires fail and holders "
	    "cannot extend; raise it (CONFIG SET maxmemory, and in "
	    "redis.conf) or free memory" :
	    "at the limit keys are evicted, lock keys among them; raise it "
	    "(CONFIG SET maxmemory, and in redis.conf) or free memory",
	    "used %s of maxmemory %s (%llu%%), maxmemory-policy %s", used_h,
	    max_h, used * 100 / max, policy);
}

/* INFO memory and persistence: eviction, appendonly, appendfsync. */
static void
check_durability(struct report *rp, struct quorum *q, const char *server)
{
	struct redis_reply	*rr;
	struct err		 e;
	char			*mem, *pers, v[128], v2[128] = "";

	mem = info(rp, q, server, "memory", &e);
	if (mem != NULL &&
	    info_field(mem, "maxmemory_policy", v, sizeof v) != NULL) {
		info_field(mem, "maxmemory", v2, sizeof v2);
		if (strcmp(v, "noeviction") == 0 || strcmp(v2, "0") == 0)
			doctor_finding(rp, server, "eviction", SEV_OK, NULL,
			    "maxmemory-policy %s%s", v, strcmp(v2, "0") == 0 &&
			    strcmp(v, "noeviction") != 0 ?
			    " with no maxmemory" : "");
		else
			doctor_finding(rp, server, "eviction", strncmp(v, "volatile",
			    8) == 0 ? SEV_ERROR : SEV_WARN,
			    "set maxmemory-policy noeviction: an evicted lock "
			    "key lets a second holder in",
			    "maxmemory-policy %s", v);
		check_memory(rp, server, mem, v);
	}
	free(mem);
	pers = info(rp, q, server, "persistence", &e);
	if (pers == NULL ||
	    info_field(pers, "aof_enabled", v, sizeof v) == NULL) {
		free(pers);
		return;
	}
	free(pers);
	if (strcmp(v, "1") != 0) {
		doctor_finding(rp, server, "persistence", SEV_WARN, "enable "
		    "appendonly yes (appendfsync everysec or always), or keep "
		    "a restarted server out for a TTL: a restart forgets the "
		    "locks it held", "appendonly no");
		return;
	}
	rr = config_get(rp, q, server, "persistence", "appendfsync");
	if (rr == NULL && rp->broken)
		return;
	if (rr != NULL && rr->elements == 2)
		doctor_finding(rp, server, "persistence",
		    strcmp(rr->element[1]->str, "no") == 0 ? SEV_WARN : SEV_OK,
		    strcmp(rr->element[1]->str, "no") == 0 ?
		    "set appendfsync everysec or always" : NULL,
		    "appendonly yes, appendfsync %s", rr->element[1]->str);
	else
		doctor_finding(rp, server, "persistence", SEV_OK, NULL,
		    "appendonly yes");
	redis_reply_free(rr);
}

static void
check_settings(struct report *rp, struct quorum *q, const char *server,
    int *cluster)
{
	struct err	 e;
	char		*srv, *clu, v[128];
	int		 major;

	if ((srv = info(rp, q, server, "server", &e)) == NULL) {
		if (rp->broken)
			return;
		doctor_finding(rp, server, "info", SEV_ERROR, "allow INFO for this "
		    "user, or doctor cannot see the settings", "%s", e.msg);
		return;
	}
	if (info_field(srv, "redis_version", v, sizeof v) != NULL) {
		major = atoi(v);
		doctor_finding(rp, server, "version", major < 6 ? SEV_ERROR : SEV_OK,
		    major < 6 ? "rlock needs Redis 6.0 or later (fractional "
		    "BLPOP timeouts, ACL users)" : NULL, "Redis %s", v);
	}
	free(srv);
	check_replication(rp, q, server);
	if (!rp->broken)
		check_durability(rp, q, server);
	clu = rp->broken ? NULL : info(rp, q, server, "cluster", &e);
	if (clu != NULL && info_field(clu, "cluster_enabled", v, sizeof v) &&
	    strcmp(v, "1") == 0) {
		*cluster = 1;
		doctor_finding(rp, server, "cluster", SEV_INFO, NULL, "cluster mode: "
		    "each lock's keys share a {NAME} hash tag; MOVED/ASK are "
		    "followed");
	}
	free(clu);
}

/* The scripts' own check: can this server run a script at all? */
static void
check_scripts(struct report *rp, struct quorum *q, const char *server)
{
	struct redis_reply	*rr;
	struct err		 e;

	rr = quorum_callv(q, 0, &e, "EVAL", "return 1", "0", NULL);
	if (rr == NULL)
		doctor_finding(rp, server, "scripts", SEV_ERROR, "grant this user "
		    "the commands the acl finding names (rlock-security(7), "
		    "ACL users)",
		    "cannot run scripts: %s", e.msg);
	else if (rr->type != REDIS_T_INTEGER || rr->integer != 1)
		doctor_wrong_shape(rp, server, "scripts", "EVAL of 'return 1'", rr);
	else
		doctor_finding(rp, server, "scripts", SEV_OK, NULL, "EVAL allowed");
	redis_reply_free(rr);
}

/*
 * Locks whose keys hold what rlock never writes (see rlock-protocol(7),
 * Scripts): each a finding, with its remedy.  Every lock's keys and
 * history are read, a script call per thousand locks.
 */
static void
check_locks(struct report *rp, struct quorum *q, const char *server,
    const char *prefix)
{
	struct lock_status	 *st;
	struct hist_event	 *ev = NULL;
	struct err		  e;
	char			**names, **logs, **bad;
	size_t			  n, nlogs, nev = 0, nbad, i;

	err_clear(&e);
	if (lock_list(q, prefix, "", &names, &n, &e) == -1) {
		/* A refusal is the acl finding's; a wrong shape, this one's. */
		if (e.kind == ERR_PROTOCOL) {
			rp->broken = 1;
			doctor_finding(rp, server, "locks", SEV_ERROR, NULL, "cannot "
			    "list the locks: %s", e.msg);
		}
		return;
	}
	if (lock_list(q, prefix, ":log", &logs, &nlogs, &e) == -1) {
		logs = NULL;
		nlogs = 0;
	}
	lock_damage_keep(1, NULL);
	st = xcalloc(n + 1, sizeof *st);
	if (lock_inspect_many(q, prefix, names, n, st, &e) == 0)
		for (i = 0; i < n; i++) {
			if (st[i].damage != NULL)
				lock_damage_report(st[i].damage);
			lock_status_free(&st[i]);
		}
	else if (e.kind == ERR_PROTOCOL) {
		rp->broken = 1;
		doctor_finding(rp, server, "locks", SEV_ERROR, NULL, "%s", e.msg);
	}
	free(st);
	err_clear(&e);
	if (history_read(q, prefix, logs, nlogs, 1, 0, &ev, &nev, &e) == 0)
		history_free(ev, nev);
	else if (e.kind == ERR_PROTOCOL) {
		rp->broken = 1;
		doctor_finding(rp, server, "locks", SEV_ERROR, NULL, "%s", e.msg);
	}
	nbad = lock_damage_keep(0, &bad);
	for (i = 0; i < nbad; i++) {
		doctor_finding(rp, server, "locks", SEV_WARN, NULL, "%s", bad[i]);
		free(bad[i]);
	}
	free(bad);
	if (nbad == 0)
		doctor_finding(rp, server, "locks", SEV_OK, NULL, "%zu lock%s, none "
		    "damaged", n, n == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	for (i = 0; i < nlogs; i++)
		free(logs[i]);
	free(logs);
}

/*
 * The names with a schedule (exec --every, --cron, rlock schedule): each
 * overdue one (a slot's time and grace passed with no start), with the
 * slots it has been idle for, each failing one, and a last start recorded
 * ahead of the server's clock by more than a slot are warnings, so that a
 * run that no machine made is heard of; a paused one is said.
 */
static size_t
schedule_findings(struct report *rp, const char *server,
    const struct lock_status *st)
{
	char		p[32], ago[32];
	long long	due = cmd_next_due(st), idle;
	size_t		bad = 0;

	if (st->every_ms > 0 && st->last_start_ms > st->now_ms + st->every_ms) {
		bad++;
		doctor_finding(rp, server, "schedules", SEV_WARN, "check the servers' "
		    "clocks (NTP); the next start places the slots anew",
		    "%s's last start is recorded %s ahead of the server's clock "
		    "(a clock set back, or a failover to a server behind)",
		    st->name, duration_format(st->last_start_ms - st->now_ms,
		    ago, sizeof ago));
	}
	if (cmd_overdue(st)) {
		bad++;
		idle = (st->now_ms - due) / st->every_ms + 1;
		doctor_finding(rp, server, "schedules", SEV_WARN, "see why no machine "
		    "started it: rlock log NAME, and each machine's cron",
		    "%s is overdue: idle for %lld slot%s of %s, %s %s ago",
		    st->name, idle, idle == 1 ? "" : "s",
		    duration_format(st->every_ms, p, sizeof p),
		    st->last_start_ms > 0 ? "last started" : "declared, never "
		    "started,", duration_format(st->now_ms - (st->last_start_ms >
		    0 ? st->last_start_ms : st->declared_ms), ago, sizeof ago));
	}
	if (cmd_failing(st)) {
		bad++;
		doctor_finding(rp, server, "schedules", SEV_WARN, "see how its runs "
		    "ended: rlock log NAME", "%s failed its last %lld run%s",
		    st->name, st->failures, st->failures == 1 ? "" : "s");
	}
	if (cmd_paused(st))
		doctor_finding(rp, server, "schedules", SEV_INFO, NULL, "%s is paused "
		    "by %s (rlock schedule resume %s)", st->name,
		    st->paused_by != NULL ? st->paused_by : "?", st->name);
	return bad;
}

static void
check_schedules(struct report *rp, struct quorum *q, const char *server,
    const char *prefix)
{
	struct lock_status	 *st;
	struct err		  e;
	char		 **names = NULL;
	size_t		  n = 0, i, late = 0;

	err_clear(&e);
	if (lock_list(q, prefix, ":every", &names, &n, &e) == -1 || n == 0) {
		free(n == 0 ? names : NULL);
		return;
	}
	st = xcalloc(n, sizeof *st);
	if (lock_inspect_many(q, prefix, names, n, st, &e) == 0) {
		for (i = 0; i < n; i++) {
			if (st[i].damage == NULL)
				late += schedule_findings(rp, server, &st[i]);
			else {
				/* Never counted among the well ones. */
				doctor_finding(rp, server, "schedules", SEV_WARN,
				    NULL, "%s", st[i].damage);
				late++;
			}
			lock_status_free(&st[i]);
		}
		if (late == 0)
			doctor_finding(rp, server, "schedules", SEV_OK, NULL, "%zu "
			    "schedule%s, none overdue or failing", n,
			    n == 1 ? "" : "s");
	}
	free(st);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * The busy-script risk.  A script that runs past busy-reply-threshold
 * (lua-time-limit before Redis 7) blocks the server: every client gets
 * BUSY until it ends or SCRIPT KILL stops it.  rlock's scripts are
 * short, but one looping on a malformed lock's keys would do it.
 */
static void
check_busy(struct report *rp, struct quorum *q, const char *server)
{
	struct redis_reply	*rr;
	const char		*name = "busy-reply-threshold";
	char			 d[32], t[32];
	long long		 ms = 0;
	int			 known = 0;

	rr = config_get(rp, q, server, "busy-scripts", name);
	if (rr != NULL && rr->elements == 0) {
		redis_reply_free(rr);
		name = "lua-time-limit";
		rr = config_get(rp, q, server, "busy-scripts", name);
	}
	if (rp->broken) {
		redis_reply_free(rr);
		return;
	}
	if (rr != NULL && rr->elements == 2) {
		ms = atoll(rr->element[1]->str);
		known = 1;
	}
	redis_reply_free(rr);
	duration_format(q->opts->timeout_ms, t, sizeof t);
	if (known && ms <= 0)
		doctor_finding(rp, server, "busy-scripts", SEV_WARN, "set "
		    "busy-reply-threshold 5000 (CONFIG SET, and in redis.conf)",
		    "%s %lld: a script that loops (one on a malformed lock) is "
		    "never interrupted: the server hangs for every client, "
		    "SCRIPT KILL included, until it is restarted", name,
		    ms);
	else if (!known)
		doctor_finding(rp, server, "busy-scripts", SEV_INFO, "on BUSY or "
		    "time-outs: redis-cli SCRIPT KILL, then rlock status to find "
		    "the malformed lock", "%s unknown (CONFIG GET refused): a "
		    "script that runs past it (one looping on a malformed lock) "
		    "blocks the server: clients get BUSY until SCRIPT KILL", name);
	else
		doctor_finding(rp, server, "busy-scripts", SEV_INFO, "on BUSY or "
		    "time-outs: redis-cli SCRIPT KILL, then rlock status to find "
		    "the malformed lock", "%s %s: a script that runs longer (one "
		    "looping on a malformed lock) blocks the server: clients get "
		    "BUSY until SCRIPT KILL%s%s%s", name,
		    duration_format(ms, d, sizeof d), ms > q->opts->timeout_ms ?
		    ", and rlock times out first (--timeout " : "",
		    ms > q->opts->timeout_ms ? t : "",
		    ms > q->opts->timeout_ms ? ")" : "");
}

/*
 * How the traffic goes, from the URL and the settings (nothing is sent):
 * a password over plain TCP to a server that is not on a loopback
 * address can be read by anyone on the path, and redis-sentinel:// is
 * plain TCP to the sentinels and to the master they name.
 */
static void
check_transport(struct report *rp, const struct url *u,
    const struct redis_opts *ro)
{
	const char	*server = u->display;
	int		 pw = u->password != NULL || ro->password != NULL;

	switch (u->scheme) {
	case URL_UNIX:
		doctor_finding(rp, server, "transport", SEV_OK, NULL, "Unix socket: "
		    "nothing crosses the network");
		return;
	case URL_TLS:
		doctor_finding(rp, server, "transport", SEV_OK, NULL, "TLS");
		return;
	case URL_SENTINEL:
		if (u->tls)
			doctor_finding(rp, server, "transport", SEV_OK, NULL, "TLS to "
			    "the sentinels and to the master they name");
		else
			doctor_finding(rp, server, "transport", SEV_WARN, "use "
			    "rediss-sentinel:// (tls-port and tls-replication "
			    "yes on the sentinels, the master and its replicas)",
			    "redis-sentinel:// is plain TCP to the sentinels "
			    "and to the master they name%s",
			    pw || ro->sentinel_password != NULL ? ": the "
			    "password goes in clear" : "");
		return;
	case URL_TCP:
		break;
	}
	if (url_host_is_loopback(u->host))
		doctor_finding(rp, server, "transport", SEV_OK, NULL, "plain TCP to a "
		    "loopback address");
	else if (pw)
		doctor_finding(rp, server, "transport", SEV_WARN, "use rediss:// "
		    "(TLS), or a Unix socket on the server's host",
		    "the password goes in clear over plain TCP to %s, which "
		    "is not a loopback address: anyone on the path can read it",
		    u->host);
	else
		doctor_finding(rp, server, "transport", SEV_INFO, "use rediss:// "
		    "(TLS)", "plain TCP to %s, which is not a loopback address: "
		    "the locks' traffic can be read and changed on the path",
		    u->host);
}

/*
 * Does the server let in a client that gives no credentials?  Asked on a
 * connection of its own, made without the URL's user and password (the
 * sentinels' own, if any, still go to the sentinels).
 */
static void
check_auth(struct report *rp, const struct url *u,
    const struct redis_opts *ro)
{
	struct quorum		 aq;
	struct url		 anon;
	struct redis_opts	 aro = *ro;
	struct redis_reply	*rr;
	struct err		 e;
	const char		*ping[] = { "PING" };

	url_dup_anonymous(&anon, u);
	aro.password = NULL;
	aro.identify = 0;
	aro.check_version = 0;
	err_clear(&e);
	quorum_init(&aq, &anon, 1, &aro);
	rr = doctor_ask(&aq, 1, ping, &e);
	if (rr != NULL && rr->type == REDIS_T_STATUS)
		doctor_finding(rp, u->display, "auth", SEV_WARN, "set requirepass, "
		    "or turn the default user off and give rlock a user of its "
		    "own as rlock-security(7), ACL users, shows; then give "
		    "rlock the password with --password-file", "a client "
		    "without a password is let in "
		    "(requirepass unset, the default user nopass): anyone who "
		    "can reach the server can take, release or forge any lock");
	else if (rr != NULL && rr->type == REDIS_T_ERROR &&
	    strncmp(rr->str, "DENIED", 6) == 0)
		doctor_finding(rp, u->display, "auth", SEV_WARN, "set requirepass, "
		    "or give rlock a user of its own as rlock-security(7), "
		    "ACL users, shows; then give rlock the password with "
		    "--password-file",
		    "no password is needed: only protected "
		    "mode keeps clients that are not local out");
	else if ((rr != NULL && rr->type == REDIS_T_ERROR &&
	    strncmp(rr->str, "NOAUTH", 6) == 0) ||
	    (rr == NULL && strstr(e.msg, "NOAUTH") != NULL))
		doctor_finding(rp, u->display, "auth", SEV_OK, NULL, "a client "
		    "without a password is refused");
	else
		doctor_finding(rp, u->display, "auth", SEV_INFO, NULL, "cannot tell "
		    "whether a client without a password is let in: %s",
		    rr != NULL && rr->str != NULL ? rr->str : e.msg);
	redis_reply_free(rr);
	quorum_close(&aq);
	url_free(&anon);
}

/* 0, or -1 when the server cannot be used at all (refused, NOAUTH). */
static int
check_server(struct report *rp, struct quorum *q, const struct url *u,
    const struct redis_opts *ro, const char *prefix)
{
	int	cluster = 0;

	/* A wrong shape: no use asking that server more. */
	rp->broken = 0;
	if (check_rtt(rp, q, u->display) == -1)
		return -1;
	check_transport(rp, u, ro);
	check_auth(rp, u, ro);
	check_settings(rp, q, u->display, &cluster);
	if (!rp->broken)
		check_scripts(rp, q, u->display);
	if (!rp->broken)
		check_busy(rp, q, u->display);
	if (!rp->broken)
		doctor_check_acl(rp, q, u, prefix, cluster);
	if (!rp->broken)
		check_locks(rp, q, u->display, prefix);
	if (!rp->broken)
		check_schedules(rp, q, u->display, prefix);
	return rp->broken ? -1 : 0;
}
static int
cmd_doctor_exec(struct cmd_ctx *ctx)
{
	struct report	 rp;
	struct quorum	 q;
	int		 i, unreachable = 0, rc;

	memset(&rp, 0, sizeof rp);
	rp.json = ctx->o.json;
	buf_init(&rp.out);
	/* One finding a line, in JSON too. */
	json_open(&rp.j, &rp.out, JSON_LINES);
	if (rp.json)
		json_array_begin(&rp.j);
	for (i = 0; i < ctx->set.nurls; i++) {
		/* Each server alone: a quorum of one, connected by the first PING. */
		quorum_init(&q, &ctx->set.urls[i], 1, &ctx->set.ropts);
		if (check_server(&rp, &q, &ctx->set.urls[i],
		    &ctx->set.ropts, ctx->o.prefix) == -1 &&
		    unreachable++ == 0)
			rp.unusable = ctx->set.urls[i].display;
		quorum_close(&q);
	}
	if (rp.json) {
		json_array_end(&rp.j);
		buf_adds(&rp.out, "\n");
	}
	rc = output_flush(&rp.out) == -1 ? EXIT_SOFTWARE :
	    unreachable ? EXIT_UNAVAILABLE : rp.worst >= SEV_WARN ? 1 : 0;
	if (rc == EXIT_UNAVAILABLE)
		log_error("doctor: %d of %d server%s could not be reached or "
		    "used, %s%s (see the error findings above)", unreachable,
		    ctx->set.nurls, ctx->set.nurls == 1 ? "" : "s",
		    rp.unusable, unreachable > 1 ? " first" : "");
	buf_free(&rp.out);
	return rc;
}
