/* doctor-acl.c: rlock doctor's ACL check: may the user run every command rlock sends? */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "scripts.h"

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

	if (!doctor_refused(err))
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
	rr = doctor_ask(q, (int)n, av, e);
	free(av);
	if (rr == NULL)
		return -1;
	/* An error, or each probe's error ("": it ran). */
	for (i = k = 0; i < NPROBES; i++)
		k += probes[i].how == IN_SCRIPT;
	if (rr->type != REDIS_T_ERROR && (rr->type != REDIS_T_ARRAY ||
	    rr->elements != k)) {
		doctor_wrong_shape(rp, server, "acl", "the probe script", rr);
		redis_reply_free(rr);
		return -2;
	}
	for (i = 0; rr->type == REDIS_T_ARRAY && i < rr->elements; i++)
		if (rr->element[i]->type != REDIS_T_STRING) {
			doctor_wrong_shape(rp, server, "acl", "the probe script", rr);
			redis_reply_free(rr);
			return -2;
		}
	if (rr->type == REDIS_T_ERROR) {
		*unchecked = 1;
		if (!doctor_refused(rr->str))
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
		if ((rr = doctor_ask(q, (int)j, av, e)) == NULL)
			return -1;
		if (rr->type == REDIS_T_ERROR)
			note_refusal(rr->str, i, bad, keys);
		redis_reply_free(rr);
	}
	return 0;
}

void
doctor_check_acl(struct report *rp, struct quorum *q, const struct url *u,
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
		doctor_finding(rp, u->display, "acl", SEV_ERROR, NULL,
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
		doctor_finding(rp, u->display, "acl", SEV_OK, NULL, "user %s may run "
		    "every command rlock sends", user);
	else
		doctor_finding(rp, u->display, "acl", sev, sev == SEV_WARN &&
		    nextra == 0 ? "run doctor again once scripts can run "
		    "there" : line.p, "%s", msg.p);
	buf_free(&line);
	buf_free(&missing);
	buf_free(&msg);
}
