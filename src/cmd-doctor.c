/* cmd-doctor.c: rlock doctor: check the servers for settings that break locks. */

/*
 * Each configured server is asked on its own connection (not as a
 * quorum: the point is to see each one), and every finding is one line:
 * its severity, the server, what was found, and what to do about it.
 * Exit 0 when nothing is wrong, 1 when something should be fixed, 69 when
 * a server cannot be reached at all.
 */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
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

enum severity { SEV_OK, SEV_INFO, SEV_WARN, SEV_ERROR };

/* Memory figures INFO gives are bounded to this before any arithmetic. */
#define DOCTOR_MAX_BYTES	(1ULL << 50)

static const char *const sev_name[] = {
	[SEV_OK] = "ok", [SEV_INFO] = "info", [SEV_WARN] = "warning",
	[SEV_ERROR] = "error",
};

struct report {
	struct buf	 out;
	int		 json;
	struct json	 j;		/* with json: the array of findings */
	enum severity	 worst;
	int		 broken;	/* this server answered a wrong shape */
	const char	*unusable;	/* the first server not usable */
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
static void
wrong_shape(struct report *rp, const char *server, const char *check,
    const char *what, const struct redis_reply *rr)
{
	rp->broken = 1;
	finding(rp, server, check, SEV_ERROR, NULL, "%s was answered with %s "
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
		wrong_shape(rp, server, "info", "INFO", rr);
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
	wrong_shape(rp, server, check, "CONFIG GET", rr);
	redis_reply_free(rr);
	return NULL;
}

/*
 * An error reply that says the ACL stands in the way (Redis 6 and 7 word
 * it differently in and out of scripts), or that the command was renamed
 * away.
 */
static int
refused(const char *err)
{
	return strncmp(err, "NOPERM", 6) == 0 ||
	    strstr(err, "can't run this command") != NULL ||
	    strstr(err, "can't access") != NULL ||
	    strstr(err, "no permissions") != NULL ||
	    strstr(err, "nknown command") != NULL ||
	    strstr(err, "nknown Redis command") != NULL;
}

/* Send argv and wait: the reply, an error reply too; NULL on a failure. */
static struct redis_reply *
ask(struct quorum *q, int argc, const char **argv, struct err *e)
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
		if ((rr = ask(q, 1, ping, &e)) == NULL)
			break;
		/* Refused by the ACL, it still went there and back. */
		if (rr->type == REDIS_T_ERROR && !refused(rr->str)) {
			redis_reply_free(rr);
			break;
		}
		if (rr->type != REDIS_T_ERROR && (rr->type != REDIS_T_STATUS ||
		    strcmp(rr->str, "PONG") != 0)) {
			wrong_shape(rp, server, "reachable", "PING", rr);
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
		finding(rp, server, "reachable", SEV_ERROR, i == 0 ? "check the "
		    "URL, the network and the credentials" : NULL, "%s", e.msg);
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
		finding(rp, server, "role", SEV_OK, NULL, "master");
	else
		finding(rp, server, "role", SEV_ERROR, "point rlock at the "
		    "master, or use a redis-sentinel:// URL",
		    "%s: a replica cannot hold locks", v);
	n = info_field(repl, "connected_slaves", v, sizeof v) ? atoi(v) : 0;
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
			finding(rp, server, "replica lag", SEV_WARN,
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
	finding(rp, server, "memory", used * 10 > max * 9 ? SEV_WARN : SEV_OK,
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
		finding(rp, server, "persistence", SEV_WARN, "enable "
		    "appendonly yes (appendfsync everysec or always), or keep "
		    "a restarted server out for a TTL: a restart forgets the "
		    "locks it held", "appendonly no");
		return;
	}
	rr = config_get(rp, q, server, "persistence", "appendfsync");
	if (rr == NULL && rp->broken)
		return;
	if (rr != NULL && rr->elements == 2)
		finding(rp, server, "persistence",
		    strcmp(rr->element[1]->str, "no") == 0 ? SEV_WARN : SEV_OK,
		    strcmp(rr->element[1]->str, "no") == 0 ?
		    "set appendfsync everysec or always" : NULL,
		    "appendonly yes, appendfsync %s", rr->element[1]->str);
	else
		finding(rp, server, "persistence", SEV_OK, NULL,
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
		finding(rp, server, "info", SEV_ERROR, "allow INFO for this "
		    "user, or doctor cannot see the settings", "%s", e.msg);
		return;
	}
	if (info_field(srv, "redis_version", v, sizeof v) != NULL) {
		major = atoi(v);
		finding(rp, server, "version", major < 6 ? SEV_ERROR : SEV_OK,
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
		finding(rp, server, "cluster", SEV_INFO, NULL, "cluster mode: "
		    "each lock's keys share a {NAME} hash tag; MOVED/ASK are "
		    "followed");
	}
	free(clu);
}

/*
 * The ACL check.  A user needs every command rlock sends: the ones the
 * Lua scripts call (Redis checks each against the user running the script,
 * so EVAL alone is not enough) and the ones sent directly.  ACL DRYRUN
 * would answer without running anything, but only for a user who may
 * administer ACLs; so each command is tried instead.  The scripts'
 * commands run in one probe script, each with pcall, on a scratch key the
 * script deletes again (a script is atomic: no one else ever sees the key);
 * the others are sent with an argument that the command rejects only after
 * the ACL has let it through.  Each refusal shows in ACL LOG.
 */

enum probe_how {
	IN_SCRIPT,	/* called by the probe script */
	THE_EVAL,	/* the EVAL that runs the probe script */
	SENT,		/* sent directly */
	SENT_CLUSTER,	/* sent directly, on a Cluster node only */
};

/* Words of a probe at most; fewer end with a NULL. */
#define PROBE_ARGS	6

struct probe {
	const char	*grant;		/* as ACL SETUSER names it */
	enum probe_how	 how;
	const char	*argv[PROBE_ARGS];	/* "$": the scratch key */
};

/* In the order of the ACL SETUSER line in rlock-security(7), ACL users. */
static const struct probe probes[] = {
	{ "evalsha", SENT,
	    { "EVALSHA", "0000000000000000000000000000000000000000", "0" } },
	{ "eval", THE_EVAL, { NULL } },
	{ "get", IN_SCRIPT, { "GET", "$" } },
	{ "set", IN_SCRIPT, { "SET", "$", "1", "PX", "10000" } },
	{ "incr", IN_SCRIPT, { "INCR", "$" } },
	{ "del", IN_SCRIPT, { "DEL", "$" } },
	{ "exists", IN_SCRIPT, { "EXISTS", "$" } },
	{ "type", IN_SCRIPT, { "TYPE", "$" } },
	{ "pttl", IN_SCRIPT, { "PTTL", "$" } },
	{ "pexpire", IN_SCRIPT, { "PEXPIRE", "$", "10000" } },
	{ "time", IN_SCRIPT, { "TIME" } },
	{ "hget", IN_SCRIPT, { "HGET", "$", "f" } },
	{ "hmget", IN_SCRIPT, { "HMGET", "$", "f" } },
	{ "hset", IN_SCRIPT, { "HSET", "$", "f", "1" } },
	{ "hdel", IN_SCRIPT, { "HDEL", "$", "f" } },
	{ "hgetall", IN_SCRIPT, { "HGETALL", "$" } },
	{ "zadd", IN_SCRIPT, { "ZADD", "$", "1", "m" } },
	{ "zrange", IN_SCRIPT, { "ZRANGE", "$", "0", "0" } },
	{ "zrank", IN_SCRIPT, { "ZRANK", "$", "m" } },
	{ "zrem", IN_SCRIPT, { "ZREM", "$", "m" } },
	{ "zremrangebyscore", IN_SCRIPT, { "ZREMRANGEBYSCORE", "$", "0", "0" } },
	{ "xadd", IN_SCRIPT, { "XADD", "$", "*", "f", "1" } },
	{ "xlen", IN_SCRIPT, { "XLEN", "$" } },
	{ "xtrim", IN_SCRIPT, { "XTRIM", "$", "MAXLEN", "0" } },
	{ "xrevrange", IN_SCRIPT, { "XREVRANGE", "$", "+", "-" } },
	{ "xread", SENT, { "XREAD", "BLOCK", "x", "STREAMS", "$", "0" } },
	{ "rpush", IN_SCRIPT, { "RPUSH", "$", "1" } },
	{ "blpop", SENT, { "BLPOP", "$", "x" } },	/* a bad timeout */
	{ "wait", SENT, { "WAIT", "0", "x" } },		/* a bad timeout */
	{ "scan", SENT, { "SCAN", "x" } },		/* a bad cursor */
	{ "info", SENT, { "INFO", "server" } },
	{ "ping", SENT, { "PING" } },
	{ "asking", SENT_CLUSTER, { "ASKING" } },
	{ "cluster|nodes", SENT_CLUSTER, { "CLUSTER", "NODES" } },
};
#define NPROBES		(sizeof probes / sizeof probes[0])
#define MAX_UNPROBED	16

/*
 * KEYS: the scratch key.  ARGV: the commands, each as its number of words
 * and the words, "$" standing for the key.  Returns each one's error, or
 * "" when it ran.
 */
static const char probe_lua[] =
	"if redis.replicate_commands then redis.replicate_commands() end\n"
	"local out, i = {}, 1\n"
	"while i <= #ARGV do\n"
	"	local n, a = tonumber(ARGV[i]), {}\n"
	"	for j = 1, n do\n"
	"		a[j] = ARGV[i + j] == '$' and KEYS[1] or ARGV[i + j]\n"
	"	end\n"
	"	local r = redis.pcall(unpack(a))\n"
	"	out[#out + 1] = type(r) == 'table' and r.err or ''\n"
	"	i = i + n + 1\n"
	"end\n"
	"redis.pcall('PEXPIRE', KEYS[1], 10000)\n"
	"redis.pcall('DEL', KEYS[1])\n"
	"return out\n";

/*
 * Mark what a refusal of probe i names: the command (bad[i]), or the key
 * (*keys: the user's key patterns leave out the prefix).
 */
static void
note_refusal(const char *err, size_t i, int *bad, int *keys)
{
	char	quoted[40];

	if (!refused(err))
		return;
	snprintf(quoted, sizeof quoted, "'%s'", probes[i].grant);
	if (strstr(err, "key") != NULL && strstr(err, quoted) == NULL)
		*keys = 1;
	else
		bad[i] = 1;
}

/* The commands the scripts call that no probe tries, lower case, once each. */
static int
unprobed(char names[][32], int max)
{
	struct script	**s;
	const char	 *p;
	char		  name[32];
	size_t		  n, i;
	int		  count = 0, k;

	for (s = scripts_all; *s != NULL; s++)
		for (p = (*s)->body; (p = strstr(p, "redis.")) != NULL;) {
			p += 6;
			if (strncmp(p, "call(", 5) == 0)
				p += 5;
			else if (strncmp(p, "pcall(", 6) == 0)
				p += 6;
			else
				continue;
			if (*p != '\'' && *p != '"')
				continue;
			n = strcspn(p + 1, "'\"");
			if (n == 0 || n >= sizeof name)
				continue;
			for (i = 0; i < n; i++)
				name[i] = tolower((unsigned char)p[1 + i]);
			name[n] = '\0';
			/* Probed sent or in a script: one ACL rule. */
			for (i = 0; i < NPROBES; i++)
				if (strcmp(probes[i].grant, name) == 0)
					break;
			for (k = 0; k < count; k++)
				if (strcmp(names[k], name) == 0)
					break;
			if (i == NPROBES && k == count && count < max)
				memcpy(names[count++], name, n + 1);
		}
	return count;
}

/* Append a grant as the command it allows: "cluster|nodes", "CLUSTER NODES". */
static void
add_command(struct buf *b, const char *grant)
{
	buf_adds(b, b->len > 0 ? ", " : "");
	for (; *grant != '\0'; grant++)
		buf_printf(b, "%c", *grant == '|' ? ' ' :
		    toupper((unsigned char)*grant));
}

/*
 * Run the probe script: mark in bad[] the script commands refused, or the
 * EVAL itself.  *keys when the scratch key is not the user's; *unchecked
 * when the script could not run, and why ("": the ACL said no).  -1 when
 * the connection failed, -2 on a reply of a wrong shape (found).
 */
static int
probe_script(struct report *rp, struct quorum *q, const char *server,
    const char *key, int *bad, int *keys, int *unchecked, char *why,
    size_t whylen, struct err *e)
{
	struct redis_reply	*rr;
	const char		**av;
	char			 counts[NPROBES][4];
	size_t			 i, j, k, n = 4;

	av = xcalloc(4 + NPROBES * 7, sizeof *av);
	av[0] = "EVAL";
	av[1] = probe_lua;
	av[2] = "1";
	av[3] = key;
	for (i = 0; i < NPROBES; i++) {
		if (probes[i].how != IN_SCRIPT)
			continue;
		for (j = 0; j < PROBE_ARGS && probes[i].argv[j] != NULL; j++)
			;
		snprintf(counts[i], sizeof counts[i], "%zu", j);
		av[n++] = counts[i];
		for (j = 0; j < PROBE_ARGS && probes[i].argv[j] != NULL; j++)
			av[n++] = probes[i].argv[j];
	}
	rr = ask(q, (int)n, av, e);
	free(av);
	if (rr == NULL)
		return -1;
	/* An error, or each probe's error ("": it ran). */
	for (i = k = 0; i < NPROBES; i++)
		k += probes[i].how == IN_SCRIPT;
	if (rr->type != REDIS_T_ERROR && (rr->type != REDIS_T_ARRAY ||
	    rr->elements != k)) {
		wrong_shape(rp, server, "acl", "the probe script", rr);
		redis_reply_free(rr);
		return -2;
	}
	for (i = 0; rr->type == REDIS_T_ARRAY && i < rr->elements; i++)
		if (rr->element[i]->type != REDIS_T_STRING) {
			wrong_shape(rp, server, "acl", "the probe script", rr);
			redis_reply_free(rr);
			return -2;
		}
	if (rr->type == REDIS_T_ERROR) {
		*unchecked = 1;
		if (!refused(rr->str))
			snprintf(why, whylen, ": %s", rr->str);
		for (i = 0; i < NPROBES; i++)
			if (probes[i].how == THE_EVAL)
				note_refusal(rr->str, i, bad, keys);
	} else if (rr->type == REDIS_T_ARRAY) {
		for (i = k = 0; i < NPROBES; i++) {
			if (probes[i].how != IN_SCRIPT)
				continue;
			if (k < rr->elements &&
			    rr->element[k]->type == REDIS_T_STRING)
				note_refusal(rr->element[k]->str, i, bad,
				    keys);
			k++;
		}
	} else {
		*unchecked = 1;
		snprintf(why, whylen, ": an unexpected reply");
	}
	redis_reply_free(rr);
	return 0;
}

/* The commands sent directly: mark the refused ones in bad[], or *keys. */
static int
probe_sent(struct quorum *q, const char *key, int cluster, int *bad,
    int *keys, struct err *e)
{
	struct redis_reply	*rr;
	const char		*av[6];
	size_t			 i, j;

	for (i = 0; i < NPROBES; i++) {
		if (probes[i].how != SENT &&
		    (probes[i].how != SENT_CLUSTER || !cluster))
			continue;
		for (j = 0; j < PROBE_ARGS && probes[i].argv[j] != NULL; j++)
			av[j] = strcmp(probes[i].argv[j], "$") == 0 ? key :
			    probes[i].argv[j];
		if ((rr = ask(q, (int)j, av, e)) == NULL)
			return -1;
		if (rr->type == REDIS_T_ERROR)
			note_refusal(rr->str, i, bad, keys);
		redis_reply_free(rr);
	}
	return 0;
}

static void
check_acl(struct report *rp, struct quorum *q, const struct url *u,
    const char *prefix, int cluster)
{
	struct err	 e;
	struct buf	 line, missing, msg;
	const char	*user = u->user != NULL ? u->user : "default", *p;
	char		*key, extra[MAX_UNPROBED][32], why[160] = "";
	int		 bad[NPROBES] = { 0 }, keys = 0, unchecked = 0;
	int		 nextra, i;
	size_t		 k;
	enum severity	 sev = SEV_OK;

	xasprintf(&key, "%s{doctor}:probe", prefix);
	if ((i = probe_script(rp, q, u->display, key, bad, &keys, &unchecked,
	    why, sizeof why, &e)) == -2) {
		free(key);
		return;
	}
	if (i == -1 || probe_sent(q, key, cluster, bad, &keys, &e) == -1) {
		finding(rp, u->display, "acl", SEV_ERROR, NULL,
		    "cannot check the commands rlock sends: %s", e.msg);
		free(key);
		return;
	}
	free(key);
	nextra = unprobed(extra, MAX_UNPROBED);

	/* The remedy: the line in rlock-security(7), for this user and prefix. */
	buf_init(&line);
	buf_printf(&line, "ACL SETUSER %s ~", user);
	for (p = prefix; *p != '\0'; p++)
		buf_printf(&line, "%s%c", strchr("*?[]\\", *p) ? "\\" : "", *p);
	buf_adds(&line, "*");
	for (k = 0; k < NPROBES; k++)
		if (probes[k].how != SENT_CLUSTER || cluster)
			buf_printf(&line, " +%s", probes[k].grant);
	for (i = 0; i < nextra; i++)
		buf_printf(&line, " +%s", extra[i]);

	buf_init(&missing);
	for (k = 0; k < NPROBES; k++)
		if (bad[k])
			add_command(&missing, probes[k].grant);
	buf_init(&msg);
	if (missing.len > 0) {
		buf_printf(&msg, "user %s may not run %s", user, missing.p);
		sev = SEV_ERROR;
	}
	if (keys) {
		buf_printf(&msg, "%suser %s may not use the keys %s*",
		    msg.len > 0 ? "; " : "", user, prefix);
		sev = SEV_ERROR;
	}
	if (unchecked) {
		buf_printf(&msg, "%sthe commands the scripts call were not "
		    "checked%s", msg.len > 0 ? "; " : "", why);
		if (sev < SEV_WARN)
			sev = SEV_WARN;
	}
	if (nextra > 0) {
		buf_printf(&msg, "%sdoctor cannot check ", msg.len > 0 ?
		    "; " : "");
		buf_free(&missing);
		buf_init(&missing);
		for (i = 0; i < nextra; i++)
			add_command(&missing, extra[i]);
		buf_printf(&msg, "%s, which a script calls", missing.p);
		if (sev < SEV_WARN)
			sev = SEV_WARN;
	}
	if (sev == SEV_OK)
		finding(rp, u->display, "acl", SEV_OK, NULL, "user %s may run "
		    "every command rlock sends", user);
	else
		finding(rp, u->display, "acl", sev, sev == SEV_WARN &&
		    nextra == 0 ? "run doctor again once scripts can run "
		    "there" : line.p, "%s", msg.p);
	buf_free(&line);
	buf_free(&missing);
	buf_free(&msg);
}

/* The scripts' own check: can this server run a script at all? */
static void
check_scripts(struct report *rp, struct quorum *q, const char *server)
{
	struct redis_reply	*rr;
	struct err		 e;

	rr = quorum_callv(q, 0, &e, "EVAL", "return 1", "0", NULL);
	if (rr == NULL)
		finding(rp, server, "scripts", SEV_ERROR, "grant this user "
		    "the commands the acl finding names (rlock-security(7), "
		    "ACL users)",
		    "cannot run scripts: %s", e.msg);
	else if (rr->type != REDIS_T_INTEGER || rr->integer != 1)
		wrong_shape(rp, server, "scripts", "EVAL of 'return 1'", rr);
	else
		finding(rp, server, "scripts", SEV_OK, NULL, "EVAL allowed");
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
			finding(rp, server, "locks", SEV_ERROR, NULL, "cannot "
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
		finding(rp, server, "locks", SEV_ERROR, NULL, "%s", e.msg);
	}
	free(st);
	err_clear(&e);
	if (history_read(q, prefix, logs, nlogs, 1, 0, &ev, &nev, &e) == 0)
		history_free(ev, nev);
	else if (e.kind == ERR_PROTOCOL) {
		rp->broken = 1;
		finding(rp, server, "locks", SEV_ERROR, NULL, "%s", e.msg);
	}
	nbad = lock_damage_keep(0, &bad);
	for (i = 0; i < nbad; i++) {
		finding(rp, server, "locks", SEV_WARN, NULL, "%s", bad[i]);
		free(bad[i]);
	}
	free(bad);
	if (nbad == 0)
		finding(rp, server, "locks", SEV_OK, NULL, "%zu lock%s, none "
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
		finding(rp, server, "schedules", SEV_WARN, "check the servers' "
		    "clocks (NTP); the next start places the slots anew",
		    "%s's last start is recorded %s ahead of the server's clock "
		    "(a clock set back, or a failover to a server behind)",
		    st->name, duration_format(st->last_start_ms - st->now_ms,
		    ago, sizeof ago));
	}
	if (cmd_overdue(st)) {
		bad++;
		idle = (st->now_ms - due) / st->every_ms + 1;
		finding(rp, server, "schedules", SEV_WARN, "see why no machine "
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
		finding(rp, server, "schedules", SEV_WARN, "see how its runs "
		    "ended: rlock log NAME", "%s failed its last %lld run%s",
		    st->name, st->failures, st->failures == 1 ? "" : "s");
	}
	if (cmd_paused(st))
		finding(rp, server, "schedules", SEV_INFO, NULL, "%s is paused "
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
			lock_status_free(&st[i]);
		}
		if (late == 0)
			finding(rp, server, "schedules", SEV_OK, NULL, "%zu "
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
		finding(rp, server, "busy-scripts", SEV_WARN, "set "
		    "busy-reply-threshold 5000 (CONFIG SET, and in redis.conf)",
		    "%s %lld: a script that loops (one on a malformed lock) is "
		    "never interrupted: the server hangs for every client, "
		    "SCRIPT KILL included, until it is restarted", name,
		    ms);
	else if (!known)
		finding(rp, server, "busy-scripts", SEV_INFO, "on BUSY or "
		    "time-outs: redis-cli SCRIPT KILL, then rlock status to find "
		    "the malformed lock", "%s unknown (CONFIG GET refused): a "
		    "script that runs past it (one looping on a malformed lock) "
		    "blocks the server: clients get BUSY until SCRIPT KILL", name);
	else
		finding(rp, server, "busy-scripts", SEV_INFO, "on BUSY or "
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
		finding(rp, server, "transport", SEV_OK, NULL, "Unix socket: "
		    "nothing crosses the network");
		return;
	case URL_TLS:
		finding(rp, server, "transport", SEV_OK, NULL, "TLS");
		return;
	case URL_SENTINEL:
		if (u->tls)
			finding(rp, server, "transport", SEV_OK, NULL, "TLS to "
			    "the sentinels and to the master they name");
		else
			finding(rp, server, "transport", SEV_WARN, "use "
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
		finding(rp, server, "transport", SEV_OK, NULL, "plain TCP to a "
		    "loopback address");
	else if (pw)
		finding(rp, server, "transport", SEV_WARN, "use rediss:// "
		    "(TLS), or a Unix socket on the server's host",
		    "the password goes in clear over plain TCP to %s, which "
		    "is not a loopback address: anyone on the path can read it",
		    u->host);
	else
		finding(rp, server, "transport", SEV_INFO, "use rediss:// "
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
	rr = ask(&aq, 1, ping, &e);
	if (rr != NULL && rr->type == REDIS_T_STATUS)
		finding(rp, u->display, "auth", SEV_WARN, "set requirepass, "
		    "or turn the default user off and give rlock a user of its "
		    "own as rlock-security(7), ACL users, shows; then give "
		    "rlock the password with --password-file", "a client "
		    "without a password is let in "
		    "(requirepass unset, the default user nopass): anyone who "
		    "can reach the server can take, release or forge any lock");
	else if (rr != NULL && rr->type == REDIS_T_ERROR &&
	    strncmp(rr->str, "DENIED", 6) == 0)
		finding(rp, u->display, "auth", SEV_WARN, "set requirepass, "
		    "or give rlock a user of its own as rlock-security(7), "
		    "ACL users, shows; then give rlock the password with "
		    "--password-file",
		    "no password is needed: only protected "
		    "mode keeps clients that are not local out");
	else if ((rr != NULL && rr->type == REDIS_T_ERROR &&
	    strncmp(rr->str, "NOAUTH", 6) == 0) ||
	    (rr == NULL && strstr(e.msg, "NOAUTH") != NULL))
		finding(rp, u->display, "auth", SEV_OK, NULL, "a client "
		    "without a password is refused");
	else
		finding(rp, u->display, "auth", SEV_INFO, NULL, "cannot tell "
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
		check_acl(rp, q, u, prefix, cluster);
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
