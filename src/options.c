/* options.c: the option table, the argv parser, and the help it prints. */

/*
 * Options may come before or after the command word, so there is one table
 * of every option, and each command says which ones it takes (cmd.c checks
 * that).  The table drives the parser, the help, the config file's keys
 * and how a value is stored: adding an option is an enum opt_id, a field
 * of struct opts, one line of opt_defs, and the commands that take it.
 * Values are checked as they are applied, so the message can name the
 * option, and the config file's line when the value came from there.
 * Which source wins is settings.c's business.
 */

#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "duration.h"
#include "err.h"
#include "lock.h"
#include "log.h"
#include "options.h"
#include "supervise.h"
#include "url.h"
#include "util.h"

#define MAX_TTL_MS		(30LL * 24 * 3600 * 1000)
#define MIN_TTL_MS		10

/* ------------------------------------------------------------- errors */

int
options_usage_verror(const struct opt_where *w, const char *fmt, va_list ap)
{
	char	msg[512], where[300] = "";

	vsnprintf(msg, sizeof msg, fmt, ap);
	if (w != NULL && w->line > 0)
		snprintf(where, sizeof where, "%s:%d: ", w->file, w->line);
	else if (w != NULL)
		snprintf(where, sizeof where, "%s: ", w->file);	/* a variable */
	log_error("%s%s", where, msg);
	return EXIT_USAGE;
}

int
options_usage_error(const struct opt_where *w, const char *fmt, ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, fmt);
	rc = options_usage_verror(w, fmt, ap);
	va_end(ap);
	return rc;
}

const char *
options_printable(const char *s, char *buf, size_t len)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 n = 0;

	for (; *p != '\0' && n + 5 < len; p++) {
		if (*p < ' ' || *p == 0x7f)
			n += snprintf(buf + n, len - n, "\\x%02x", *p);
		else
			buf[n++] = *p;
	}
	if (*p != '\0' && len > 4)
		memcpy(buf + (n < len - 4 ? n : len - 4), "...", 4);
	else
		buf[n] = '\0';
	return buf;
}

/* ------------------------------------------------------------- values */

static int
parse_duration(const struct opt_where *w, const char *opt, const char *raw,
    int64_t *ms, int allow_zero, int64_t max)
{
	const char	*v;
	char		 d[32], shown[128], why[64];

	v = options_printable(raw, shown, sizeof shown);
	if (duration_parse(raw, ms, why, sizeof why) == -1)
		return options_usage_error(w, "invalid duration '%s' for --%s: "
		    "%s (use e.g. 250ms, 1.5s, 30, 2m or 1h)", v, opt, why);
	if (*ms == 0 && !allow_zero)
		return options_usage_error(w, "invalid duration '%s' for --%s: "
		    "it must be more than zero", v, opt);
	if (max > 0 && *ms > max)
		return options_usage_error(w, "invalid duration '%s' for --%s: "
		    "the limit is %s", v, opt, duration_format(max, d, sizeof d));
	return 0;
}

static int
parse_ttl(struct opts *o, const char *v, const struct opt_where *w)
{
	char	shown[128];
	int	rc;

	if ((rc = parse_duration(w, "ttl", v, &o->ttl_ms, 0, MAX_TTL_MS)) != 0)
		return rc;
	if (o->ttl_ms < MIN_TTL_MS)
		return options_usage_error(w, "invalid duration '%s' for --ttl: "
		    "the minimum is %dms (less would be spent on the drift "
		    "margin, 1%% + 2ms, and a round trip)",
		    options_printable(v, shown, sizeof shown), MIN_TTL_MS);
	return 0;
}

static int
parse_no_wait(struct opts *o, const char *v, const struct opt_where *w)
{
	o->wait_ms = 0;
	return 0;
}

/*
 * v, digits only, as a number from min to max into *n; otherwise a usage
 * error naming --opt and what the number counts.
 */
static int
parse_count(const char *v, long min, long max, int *n, const char *opt,
    const char *what, const struct opt_where *w)
{
	char	*end, shown[128];
	long	 l;

	errno = 0;
	l = strtol(v, &end, 10);
	if (!isdigit((unsigned char)*v) || *end != '\0' || errno != 0 ||
	    l < min || l > max)
		return options_usage_error(w, "invalid --%s '%s': use %s from "
		    "%ld to %ld", opt, options_printable(v, shown, sizeof shown),
		    what, min, max);
	*n = (int)l;
	return 0;
}

static int
parse_conflict_exit_code(struct opts *o, const char *v,
    const struct opt_where *w)
{
	return parse_count(v, 0, 255, &o->conflict_exit_code,
	    "conflict-exit-code", "an exit status", w);
}

static int
parse_wait_replicas(struct opts *o, const char *v, const struct opt_where *w)
{
	return parse_count(v, 0, 1000, &o->wait_replicas, "wait-replicas",
	    "a number of replicas", w);
}

static int
parse_limit(struct opts *o, const char *v, const struct opt_where *w)
{
	return parse_count(v, 1, 10000, &o->limit, "limit",
	    "a number of holders", w);
}

/* exec --pending N: at most N waiters (rlock-exec(7), deploy queues). */
static int
parse_pending(struct opts *o, const char *v, const struct opt_where *w)
{
	return parse_count(v, 1, 1000, &o->pending, "pending",
	    "a number of waiters", w);
}

/* acquire --hold --pid PID: the process the lock is kept for. */
static int
parse_pid(struct opts *o, const char *v, const struct opt_where *w)
{
	return parse_count(v, 1, INT_MAX, &o->pid, "pid", "a process id", w);
}

static int
parse_history_length(struct opts *o, const char *v,
    const struct opt_where *w)
{
	return parse_count(v, 0, 100000, &o->history_length, "history-length",
	    "a number of events", w);
}

static int
parse_log_count(struct opts *o, const char *v, const struct opt_where *w)
{
	return parse_count(v, 1, 100000, &o->count, "count",
	    "a number of events", w);
}

static int
parse_format(struct opts *o, const char *v, const struct opt_where *w)
{
	if (strcmp(v, "text") != 0 && strcmp(v, "json") != 0 &&
	    strcmp(v, "openmetrics") != 0)
		return options_usage_error(w, "invalid --format '%s': it is "
		    "text, json or openmetrics", v);
	o->format = v;
	return 0;
}

static int
parse_token(struct opts *o, const char *t, const struct opt_where *w)
{
	const unsigned char	*p;

	o->token = t;
	if (*t == '\0' || strlen(t) > TOKEN_MAX)
		return options_usage_error(w, "invalid --token: it must be "
		    "1-%d bytes long", TOKEN_MAX);
	for (p = (const unsigned char *)t; *p != '\0'; p++)
		if (*p <= ' ' || *p == 0x7f)
			return options_usage_error(w, "invalid --token: byte "
			    "%zu (0x%02x) is whitespace or a control character",
			    (size_t)(p - (const unsigned char *)t) + 1, *p);
	return 0;
}

/* "TERM", "SIGTERM", "term", "15", or "ignore" (0). */
static int
parse_on_lost(struct opts *o, const char *v, const struct opt_where *w)
{
	const char	*name = v, *abbrev;
	char		 shown[128];
	char		*end;
	long		 n;
	int		 s;

	if (strcasecmp(v, "ignore") == 0) {
		o->on_lost = 0;
		return 0;
	}
	if (*v >= '0' && *v <= '9') {
		n = strtol(v, &end, 10);
		if (*end == '\0' && n > 0 && n < NSIG) {
			o->on_lost = (int)n;
			return 0;
		}
	} else {
		if (strncasecmp(name, "SIG", 3) == 0)
			name += 3;
		for (s = 1; s < NSIG; s++)
			if ((abbrev = sigabbrev_np(s)) != NULL &&
			    strcasecmp(abbrev, name) == 0) {
				o->on_lost = s;
				return 0;
			}
	}
	return options_usage_error(w, "invalid signal '%s' for --on-lost: use "
	    "a name such as TERM, INT or KILL, a number, or 'ignore'",
	    options_printable(v, shown, sizeof shown));
}

int
options_check_prefix(const char *p, const struct opt_where *w)
{
	const unsigned char	*s;
	char			 shown[128];

	if (strlen(p) > 200)
		return options_usage_error(w, "invalid --prefix: longer than "
		    "200 bytes");
	for (s = (const unsigned char *)p; *s != '\0'; s++)
		if (*s <= ' ' || *s == 0x7f || *s == '{' || *s == '}')
			return options_usage_error(w, "invalid --prefix '%s': "
			    "byte %zu (0x%02x) is whitespace, a control "
			    "character or a brace",
			    options_printable(p, shown, sizeof shown),
			    (size_t)(s - (const unsigned char *)p) + 1, *s);
	return 0;
}

static int
parse_prefix(struct opts *o, const char *v, const struct opt_where *w)
{
	o->prefix = v;
	return options_check_prefix(v, w);
}

/*
 * Commas cannot separate URLs (a sentinel URL has its own), so whitespace
 * does.
 */
/* exec --leftovers wait|kill|leave. */
static int
parse_leftovers(struct opts *o, const char *v, const struct opt_where *w)
{
	char	shown[128];

	if (strcmp(v, "wait") == 0)
		o->leftovers = LEFTOVERS_WAIT;
	else if (strcmp(v, "kill") == 0)
		o->leftovers = LEFTOVERS_KILL;
	else if (strcmp(v, "leave") == 0)
		o->leftovers = LEFTOVERS_LEAVE;
	else
		return options_usage_error(w, "invalid --leftovers '%s': use "
		    "wait, kill or leave",
		    options_printable(v, shown, sizeof shown));
	return 0;
}

static int
parse_record(struct opts *o, const char *v, const struct opt_where *w)
{
	char	shown[128];

	if (strcmp(v, "name") == 0)
		o->record = RECORD_NAME;
	else if (strcmp(v, "full") == 0)
		o->record = RECORD_FULL;
	else if (strcmp(v, "none") == 0)
		o->record = RECORD_NONE;
	else
		return options_usage_error(w, "invalid --record '%s': use "
		    "full, name or none",
		    options_printable(v, shown, sizeof shown));
	return 0;
}

static int
parse_label(struct opts *o, const char *v, const struct opt_where *w)
{
	const unsigned char	*p;

	if (*v == '\0')
		return options_usage_error(w, "--label needs a text; for no "
		    "record of the command at all, use --record none");
	for (p = (const unsigned char *)v; *p != '\0'; p++)
		if (*p < ' ' || *p == 0x7f)
			return options_usage_error(w, "--label: a control "
			    "character (\\x%02x) at byte %d; the label is "
			    "shown on one line", *p, (int)(p -
			    (const unsigned char *)v) + 1);
	o->label = v;
	return 0;
}

int
options_add_urls(struct opts *o, const char *v, const struct opt_where *w)
{
	size_t	n;

	if (v[strspn(v, " \t\n")] == '\0')
		return options_usage_error(w, "invalid --url: empty URL");
	for (v += strspn(v, " \t\n"); *v != '\0'; v += strspn(v, " \t\n")) {
		if (o->nurl == MAX_URLS)
			return options_usage_error(w, "too many URLs (at most "
			    "%d)", MAX_URLS);
		n = strcspn(v, " \t\n");
		/* It may hold a password: kept out of core dumps. */
		o->url[o->nurl++] = secret_strndup(v, n);
		v += n;
	}
	return 0;
}

void
options_clear_urls(struct opts *o)
{
	while (o->nurl > 0)
		secret_free(o->url[--o->nurl]);
}

/* -------------------------------------------------------------- table */

#define SET(f, v)	.kind = OPT_KIND_SET, .field = offsetof(struct opts, f), \
			.set = (v)
#define STRING(f)	.kind = OPT_KIND_STRING, \
			.field = offsetof(struct opts, f)
#define DURATION(f, max) .kind = OPT_KIND_DURATION, \
			.field = offsetof(struct opts, f), .max_ms = (max)
#define PARSE(fn)	.kind = OPT_KIND_PARSE, .parse = (fn)

static const struct opt_def opt_defs[] = {
	{ O_URL, 'u', "url", "URL",
	  "Redis to use; repeat it for a quorum (default $RLOCK_URL, "
	  "else " DEFAULT_URL ")",
	  PARSE(options_add_urls) },
	{ O_PASSWORD_FILE, 0, "password-file", "FILE",
	  "the password, from FILE (default $RLOCK_PASSWORD)",
	  STRING(password_file) },
	{ O_SENTINEL_USER, 0, "sentinel-user", "NAME",
	  "the sentinels' user (with --sentinel-password-file)",
	  STRING(sentinel_user) },
	{ O_SENTINEL_PASSWORD_FILE, 0, "sentinel-password-file", "FILE",
	  "the sentinels' password, from FILE (default "
	  "$RLOCK_SENTINEL_PASSWORD, else the master's)",
	  STRING(sentinel_password_file) },
	{ O_PREFIX, 0, "prefix", "P",
	  "key prefix (default $RLOCK_PREFIX, else " DEFAULT_PREFIX ")",
	  PARSE(parse_prefix) },
	{ O_CONNECT_TIMEOUT, 0, "connect-timeout", "DUR",
	  "bound on connecting and authenticating (default 2s)",
	  DURATION(connect_timeout_ms, 0) },
	{ O_TIMEOUT, 0, "timeout", "DUR",
	  "bound on one Redis round trip (default 2s)",
	  DURATION(timeout_ms, 0) },
	{ O_JSON, 0, "json", NULL,
	  "JSON on stdout (acquire, status, log, watch, doctor)",
	  SET(json, 1) },
	{ O_QUIET, 'q', "quiet", NULL, "only errors on stderr",
	  SET(verbosity, LOG_LEVEL_QUIET) },
	{ O_VERBOSE, 'v', "verbose", NULL, "timestamped progress on stderr",
	  SET(verbosity, LOG_LEVEL_VERBOSE) },
	{ O_HELP, 'h', "help", NULL, "show help and exit",
	  .flags = OPTF_ARGV_ONLY },
	{ O_VERSION, 'V', "version", NULL, "show the version and exit",
	  .flags = OPTF_ARGV_ONLY },
	{ O_TTL, 't', "ttl", "DUR",
	  "lock expiry (default 30s)",
	  PARSE(parse_ttl) },
	{ O_WAIT, 'w', "wait", "DUR",
	  "wait at most DUR for a busy lock (default: forever)",
	  DURATION(wait_ms, 0), .flags = OPTF_ZERO_OK },
	{ O_NO_WAIT, 'n', "no-wait", NULL, "same as --wait 0",
	  PARSE(parse_no_wait) },
	{ O_CONFLICT_EXIT_CODE, 'E', "conflict-exit-code", "N",
	  "exit status when the lock stays busy (default 1)",
	  PARSE(parse_conflict_exit_code) },
	{ O_TOKEN, 0, "token", "TOKEN",
	  "take the lock with TOKEN instead of a random one",
	  PARSE(parse_token), .flags = OPTF_ARGV_ONLY },
	{ O_FORCE, 0, "force", NULL,
	  "delete the lock whoever holds it, and say whose it was",
	  SET(force, 1), .flags = OPTF_ARGV_ONLY },
	{ O_HEARTBEAT, 0, "heartbeat", "DUR",
	  "extend the lock this often (default TTL/3)",
	  DURATION(heartbeat_ms, 0) },
	{ O_ON_LOST, 0, "on-lost", "SIG|ignore",
	  "signal for the command if lost (default TERM)",
	  PARSE(parse_on_lost) },
	{ O_KILL_AFTER, 0, "kill-after", "DUR",
	  "then SIGKILL if it still runs after DUR (default 10s)",
	  DURATION(kill_after_ms, 0), .flags = OPTF_ZERO_OK },
	{ O_FOREGROUND, 0, "foreground", NULL,
	  "run the command in rlock's own process group (no guard)",
	  SET(foreground, 1) },
	{ O_COMMAND, 'c', "command", "STRING", "run sh -c STRING",
	  STRING(command), .flags = OPTF_ARGV_ONLY },
	{ O_LEFTOVERS, 0, "leftovers", "MODE",
	  "what it left running: wait (the default), kill or leave",
	  PARSE(parse_leftovers) },
	{ O_REASON, 0, "reason", "TEXT",
	  "what the history says (default: by rlock release)",
	  STRING(reason), .flags = OPTF_ARGV_ONLY },
	{ O_RECORD, 0, "record", "WHAT",
	  "what status and history keep: name "
	  "(the default), full (its words, passwords masked) or none",
	  PARSE(parse_record) },
	{ O_LABEL, 0, "label", "TEXT",
	  "record TEXT instead of the command (see --record)",
	  PARSE(parse_label), .flags = OPTF_ARGV_ONLY },
	{ O_HOLD, 0, "hold", NULL,
	  "leave a keeper holding the lock while the caller (or "
	  "--pid) lives",
	  SET(hold, 1), .flags = OPTF_ARGV_ONLY },
	{ O_PID, 0, "pid", "PID",
	  "with --hold: hold while PID lives, not the caller",
	  PARSE(parse_pid), .flags = OPTF_ARGV_ONLY },
	{ O_EVERY, 0, "every", "PERIOD",
	  "at most one start of NAME a PERIOD, across machines",
	  DURATION(every_ms, MAX_TTL_MS), .flags = OPTF_ARGV_ONLY },
	{ O_RETRY_FAILED, 0, "retry-failed", NULL,
	  "with --every/--cron: only an exit 0 counts for its slot",
	  SET(retry_failed, 1), .flags = OPTF_ARGV_ONLY },
	{ O_SPLAY, 0, "splay", "DUR",
	  "sleep a random time below DUR first (spread a fleet)",
	  DURATION(splay_ms, MAX_TTL_MS), .flags = OPTF_ZERO_OK },
	{ O_OVERDUE, 0, "overdue", NULL,
	  "only names run with --every that missed a start; exit 1 if any",
	  SET(overdue, 1), .flags = OPTF_ARGV_ONLY },
	{ O_FAILING, 0, "failing", NULL,
	  "only schedules whose last run failed; exit 1 if any",
	  SET(failing, 1), .flags = OPTF_ARGV_ONLY },
	{ O_GRACE, 0, "grace", "DUR",
	  "how late a slot's start may come before it is overdue "
	  "(default: half the period)",
	  DURATION(grace_ms, MAX_TTL_MS), .flags = OPTF_ARGV_ONLY },
	{ O_CRON, 0, "cron", "EXPR",
	  "at most one start at each time of crontab EXPR",
	  STRING(cron), .flags = OPTF_ARGV_ONLY },
	{ O_CRON_TZ, 0, "cron-tz", "ZONE",
	  "--cron's time zone, as CRON_TZ (default: the machine's)",
	  STRING(cron_tz), .flags = OPTF_ARGV_ONLY },
	{ O_FOR, 0, "for", "DUR",
	  "pause for DUR (default: until resumed)",
	  DURATION(for_ms, MAX_TTL_MS), .flags = OPTF_ARGV_ONLY },
	{ O_MIN_HOLD, 0, "min-hold", "DUR",
	  "keep the lock at least DUR, then let it expire",
	  DURATION(min_hold_ms, MAX_TTL_MS), .flags = OPTF_ZERO_OK },
	{ O_TLS_CA, 0, "tls-ca", "FILE",
	  "verify rediss:// servers with this CA (default: system)",
	  STRING(tls.ca) },
	{ O_TLS_CERT, 0, "tls-cert", "FILE", "client certificate for TLS",
	  STRING(tls.cert) },
	{ O_TLS_KEY, 0, "tls-key", "FILE", "private key of --tls-cert",
	  STRING(tls.key) },
	{ O_TLS_SERVER_NAME, 0, "tls-server-name", "NAME",
	  "expected certificate name (default: URL's host)",
	  STRING(tls.server_name) },
	{ O_TLS_INSECURE, 0, "tls-insecure", NULL,
	  "do not verify the server's certificate (testing only)",
	  SET(tls.insecure, 1) },
	{ O_WAIT_REPLICAS, 0, "wait-replicas", "N",
	  "wait until N replicas have each write (up to --timeout)",
	  PARSE(parse_wait_replicas) },
	{ O_SYSLOG, 0, "syslog", NULL,
	  "also log errors and events to syslog (daemon facility)",
	  SET(syslog, 1) },
	{ O_MAX_RUNTIME, 0, "max-runtime", "DUR",
	  "stop the command after DUR, release, exit 124",
	  DURATION(max_runtime_ms, MAX_TTL_MS) },
	{ O_LIMIT, 0, "limit", "N",
	  "a semaphore: up to N holders at once, each with a token",
	  PARSE(parse_limit) },
	{ O_SHARED, 's', "shared", NULL,
	  "a shared (reader) hold: many at once, none exclusive",
	  SET(shared, 1), .flags = OPTF_ARGV_ONLY },
	{ O_NO_HISTORY, 0, "no-history", NULL,
	  "write no history for this run (see rlock log)",
	  SET(no_history, 1) },
	{ O_HISTORY_LENGTH, 0, "history-length", "N",
	  "events a lock's history keeps (default 100; 0: none)",
	  PARSE(parse_history_length) },
	{ O_HISTORY_EXPIRY, 0, "history-expiry", "DUR",
	  "history lasts DUR after its last event (default 30d)",
	  DURATION(history_expiry_ms, 0) },
	{ O_COUNT, 'n', "count", "N",
	  "show the newest N events of each lock (default 20)",
	  PARSE(parse_log_count), .flags = OPTF_ARGV_ONLY },
	{ O_SINCE, 0, "since", "DUR",
	  "show only events of the last DUR",
	  DURATION(since_ms, 0), .flags = OPTF_ARGV_ONLY },
	{ O_FORMAT, 0, "format", "FORMAT",
	  "text (default), json or openmetrics (Prometheus)",
	  PARSE(parse_format), .flags = OPTF_ARGV_ONLY },
	{ O_FIFO, 0, "fifo", NULL,
	  "wait in line: first come, first served",
	  SET(fifo, 1) },
	{ O_PENDING, 0, "pending", "N",
	  "keep the N newest waiters; older ones exit 36",
	  PARSE(parse_pending), .flags = OPTF_ARGV_ONLY },
	{ O_REPLACE, 0, "replace", NULL,
	  "stop the holder (it exits 37), then run",
	  SET(replace, 1), .flags = OPTF_ARGV_ONLY },
	{ O_NO_REPLACE, 0, "no-replace", NULL,
	  "a newcomer's --replace waits for this run",
	  SET(no_replace, 1), .flags = OPTF_ARGV_ONLY },
	{ O_CONFIG, 0, "config", "FILE",
	  "read FILE (default $RLOCK_CONFIG, else " DEFAULT_CONFIG ")",
	  STRING(config), .flags = OPTF_ARGV_ONLY },
};
#define N_OPTS	(sizeof opt_defs / sizeof opt_defs[0])

#undef SET
#undef STRING
#undef DURATION
#undef PARSE

/*
 * An empty value is the same as none, wherever it comes from: the next
 * source in line (flag > environment > config file > default) decides.
 * Not for a duration or a number, where empty is a usage error as 5x is,
 * nor for -c, whose empty command is a command.
 */
int
options_empty_is_unset(const struct opt_def *d, const char *v)
{
	return v != NULL && *v == '\0' && d->id != O_COMMAND &&
	    (d->arg == NULL || (strcmp(d->arg, "DUR") != 0 &&
	    strcmp(d->arg, "PERIOD") != 0 && strcmp(d->arg, "N") != 0));
}

int
options_apply(struct opts *o, const struct opt_def *d, const char *v,
    const struct opt_where *w)
{
	char	*field = (char *)o + d->field;

	if (options_empty_is_unset(d, v))
		return 0;
	o->given |= 1ULL << d->id;
	switch (d->kind) {
	case OPT_KIND_NONE:
		return 0;
	case OPT_KIND_SET:
		*(int *)field = d->set;
		return 0;
	case OPT_KIND_STRING:
		*(const char **)field = v;
		return 0;
	case OPT_KIND_DURATION:
		return parse_duration(w, d->longopt, v, (int64_t *)field,
		    (d->flags & OPTF_ZERO_OK) != 0, d->max_ms);
	case OPT_KIND_PARSE:
		return d->parse(o, v, w);
	}
	return options_usage_error(w, "internal error: option %d", d->id);
}

const struct opt_def *
options_table(size_t *n)
{
	*n = N_OPTS;
	return opt_defs;
}

const struct opt_def *
options_find(const char *name, size_t len)
{
	size_t	i;

	for (i = 0; i < N_OPTS; i++)
		if (strlen(opt_defs[i].longopt) == len &&
		    strncmp(opt_defs[i].longopt, name, len) == 0)
			return &opt_defs[i];
	return NULL;
}

/*
 * A letter may mean one thing to one command and another to another (-n:
 * acquire's --no-wait, log's --count): once the command is known, its
 * own option wins.
 */
static const struct opt_def *
find_short(int c, const struct cmd_entry *ce)
{
	const struct opt_def	*first = NULL;
	size_t			 i;

	for (i = 0; i < N_OPTS; i++) {
		if (opt_defs[i].shortopt != c)
			continue;
		if (ce == NULL || ((ce->options | OPTS_GLOBAL) &
		    (1ULL << opt_defs[i].id)))
			return &opt_defs[i];
		if (first == NULL)
			first = &opt_defs[i];
	}
	return first;
}

const char *
options_first_name(uint64_t mask)
{
	size_t	i;

	for (i = 0; i < N_OPTS; i++)
		if (mask & (1ULL << opt_defs[i].id))
			return opt_defs[i].longopt;
	return "?";
}

/* ------------------------------------------------------------ parsing */

/*
 * A password given in a URL on the command line shows in ps(1) for as
 * long as it stays in argv.  Once the URL is copied, overwrite it in
 * place with URL_MASK, the same whatever its length: what
 * /proc/PID/cmdline shows from then on has neither the password nor its
 * length.  The words after it move up, and the bytes freed at the end of
 * argv's area become NULs.  (The moment before this runs cannot be
 * helped, nor can a password shorter than the mask be masked without
 * showing its length: --password-file and RLOCK_PASSWORD are the ways
 * never to show it.)
 */
static int	  scrub_argc;
static char	**scrub_argv;

/* The end of argv's strings, if they lie end to end after arg; else NULL. */
static char *
argv_area_end(const char *arg)
{
	char	*end = NULL;
	int	 i;

	for (i = 0; i < scrub_argc; i++) {
		if (end != NULL && scrub_argv[i] != end)
			return NULL;
		if (end != NULL || (arg >= scrub_argv[i] &&
		    arg <= scrub_argv[i] + strlen(scrub_argv[i])))
			end = scrub_argv[i] + strlen(scrub_argv[i]) + 1;
	}
	return end;
}

static void
scrub_password(char *arg)
{
	const char	*p, *a;
	char		*pw, *at, *end, *from = arg;
	size_t		 len, shift;
	int		 i;

	while ((p = url_find_password(from, &a)) != NULL) {
		pw = (char *)p;
		at = (char *)a;
		len = (size_t)(at - pw);
		if (len < sizeof URL_MASK - 1) {
			memset(pw, '*', len);
			from = at;
			continue;
		}
		shift = len - (sizeof URL_MASK - 1);
		if ((end = argv_area_end(arg)) == NULL)
			end = at + strlen(at) + 1;	/* this word only */
		memcpy(pw, URL_MASK, sizeof URL_MASK - 1);
		memmove(pw + sizeof URL_MASK - 1, at, (size_t)(end - at));
		memset(end - shift, '\0', shift);
		for (i = 0; i < scrub_argc; i++)
			if (scrub_argv[i] > at && scrub_argv[i] < end)
				scrub_argv[i] -= shift;
		from = pw + sizeof URL_MASK - 1;
	}
}

/* Apply d with v (a pointer into argv); then scrub what must not show. */
static int
apply_arg(struct opts *o, const struct opt_def *d, char *v)
{
	int	rc;

	if ((rc = options_apply(o, d, v, NULL)) != 0)
		return rc;
	if (d->id == O_URL)
		scrub_password(v);
	return 0;
}

/* --name, --name=VALUE or --name VALUE, at argv[*i]. */
static int
parse_long(struct opts *o, int argc, char **argv, int *i)
{
	const struct opt_def	*d;
	char			*a = argv[*i], *eq, *v = NULL;
	size_t			 len;

	eq = strchr(a + 2, '=');
	len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
	if ((d = options_find(a + 2, len)) == NULL)
		return options_usage_error(NULL, "unknown option '%.*s'; see "
		    "'rlock --help'", (int)len + 2, a);
	if (d->arg == NULL && eq != NULL)
		return options_usage_error(NULL, "option --%s takes no value",
		    d->longopt);
	if (d->arg != NULL) {
		if (eq != NULL)
			v = eq + 1;
		else if (*i + 1 < argc)
			v = argv[++*i];
		else
			return options_usage_error(NULL, "option --%s needs a "
			    "value (%s)", d->longopt, d->arg);
	}
	return apply_arg(o, d, v);
}

/* -x, -xyz, -tVALUE or -t VALUE, at argv[*i]. */
static int
parse_short(struct opts *o, int argc, char **argv, int *i,
    const struct cmd_entry *ce)
{
	const struct opt_def	*d;
	char			*a, *v;
	int			 rc;

	for (a = argv[*i] + 1; *a != '\0'; a++) {
		if ((d = find_short(*a, ce)) == NULL)
			return options_usage_error(NULL, "unknown option '-%c'; "
			    "see 'rlock --help'", *a);
		v = NULL;
		if (d->arg != NULL) {
			if (a[1] != '\0')
				v = a + 1;
			else if (*i + 1 < argc)
				v = argv[++*i];
			else
				return options_usage_error(NULL, "option -%c "
				    "needs a value (%s)", *a, d->arg);
		}
		if ((rc = apply_arg(o, d, v)) != 0)
			return rc;
		if (v != NULL)
			break;
	}
	return 0;
}

/*
 * The first word that is not an option (or an option's value) is the
 * command; later ones are its arguments.  Once a command has child_after
 * arguments, the next such word starts the child's argv and parsing stops
 * there, as a leading '+' does for getopt: exec's command keeps its own
 * options.
 */
int
options_parse(struct opts *o, int argc, char **argv,
    const struct cmd_entry *(*find_cmd)(const char *),
    const struct cmd_entry **cep)
{
	const char	*a;
	int		 i, rc, dashdash = 0;

	*cep = NULL;
	scrub_argc = argc;
	scrub_argv = argv;
	o->args = xcalloc(argc + 1, sizeof *o->args);
	for (i = 1; i < argc; i++) {
		a = argv[i];
		if (!dashdash && strcmp(a, "--") == 0) {
			dashdash = 1;
			continue;
		}
		if (dashdash || a[0] != '-' || a[1] == '\0') {
			if (*cep == NULL) {
				if ((*cep = find_cmd(a)) == NULL)
					return EXIT_USAGE;
				continue;
			}
			if ((*cep)->child_after > 0 &&
			    o->nargs == (*cep)->child_after) {
				o->child = &argv[i];
				o->nchild = argc - i;
				break;
			}
			o->args[o->nargs++] = argv[i];
			continue;
		}
		rc = a[1] == '-' ? parse_long(o, argc, argv, &i) :
		    parse_short(o, argc, argv, &i, *cep);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* --------------------------------------------------------------- help */

/*
 * Help fits a screen: 80 columns, the description column at HELP_COL,
 * words wrapped under it.  A command's help lists only its own options
 * and points to rlock --help for the global ones.
 */
#define HELP_WIDTH	80
#define HELP_COL	24

/*
 * "  LEFT  TEXT", TEXT wrapped at HELP_WIDTH under HELP_COL; a LEFT too
 * wide for the column pushes the first line's text right.
 */
static void
print_entry(FILE *f, const char *left, const char *text)
{
	const char	*p = text, *end, *sp;
	int		 col, room;

	col = fprintf(f, "  %s", left);
	col += fprintf(f, "%*s", col <= HELP_COL - 2 ? HELP_COL - col : 2, "");
	room = HELP_WIDTH - col;
	while (*p != '\0') {
		end = p + strlen(p);
		if (end - p > room) {
			/* The last space that keeps the line in the room. */
			for (sp = p + room; sp > p && *sp != ' '; sp--)
				;
			end = sp > p ? sp : p + room;
		}
		fprintf(f, "%.*s\n", (int)(end - p), p);
		for (p = end; *p == ' '; p++)
			;
		if (*p != '\0')
			fprintf(f, "%*s", HELP_COL, "");
		room = HELP_WIDTH - HELP_COL;
	}
}

static void
print_options(FILE *f, uint64_t mask, const struct cmd_entry *ce)
{
	const struct opt_def	*d;
	char			 left[64];
	size_t			 i;

	for (i = 0; i < N_OPTS; i++) {
		d = &opt_defs[i];
		if (!(mask & (1ULL << d->id)))
			continue;
		if (d->shortopt)
			snprintf(left, sizeof left, "-%c, --%s%s%s", d->shortopt,
			    d->longopt, d->arg ? " " : "", d->arg ? d->arg : "");
		else
			snprintf(left, sizeof left, "    --%s%s%s", d->longopt,
			    d->arg ? " " : "", d->arg ? d->arg : "");
		print_entry(f, left,
		    ce != NULL && ce->opt_help[d->id] ? ce->opt_help[d->id] :
		    d->help);
	}
}

void
options_help(FILE *f, const struct cmd_entry *ce,
    const struct cmd_entry *const *table)
{
	const struct cmd_entry *const	*c;
	char				 left[64];

	if (ce != NULL) {
		fprintf(f, "usage: rlock [OPTIONS] %s%s%s\n\n%s.\n",
		    ce->name, *ce->args ? " " : "", ce->args, ce->summary);
		fprintf(f, "\nOptions:\n");
		print_options(f, ce->options | OPT(HELP), ce);
		fprintf(f, "\nGlobal options (--url, --config, --json, --quiet...): "
		    "'rlock --help'.\n"
		    "Every option: rlock(1) OPTIONS; how it works: rlock(7).\n");
		return;
	}
	fprintf(f, "usage: rlock [OPTIONS] COMMAND [ARGS...]\n\n"
	    "A distributed lock for shell scripts and cron, backed by Redis."
	    "\n\nCommands:\n");
	for (c = table; *c != NULL; c++) {
		snprintf(left, sizeof left, "%s%s%s", (*c)->name,
		    *(*c)->args ? " " : "", (*c)->args);
		print_entry(f, left, (*c)->summary);
	}
	fprintf(f, "\nGlobal options:\n");
	print_options(f, OPTS_GLOBAL | OPT(VERSION), NULL);
	fprintf(f, "\nDurations: 250ms, 1.5s, 30 (s), 2m, 1h.  "
	    "More: 'rlock COMMAND --help', rlock(1).\n");
}
