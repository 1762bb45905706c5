/* cmd.c: the command table, option parsing and precedence, shared helpers. */

/*
 * Options may come before or after the command word, so there is one table
 * of every option, and each command says which ones it takes; one that
 * does not belong is a usage error naming the command.  Values are checked
 * as they are parsed, so the message can name the option.  Precedence is
 * flag > environment > default, applied once parsing is done.  Only this
 * layer (and the cmd-*.c files) print errors and choose exit statuses.
 */

#include "config.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cmd.h"
#include "conffile.h"
#include "duration.h"
#include "log.h"
#include "output.h"
#include "signals.h"
#include "util.h"

#define DEFAULT_URL		"redis://127.0.0.1:6379"
#define DEFAULT_PREFIX		"rlock:"
#define DEFAULT_CONFIG		"/etc/rlock.conf"
#define DEFAULT_TIMEOUT_MS	2000
#define MAX_TTL_MS		(30LL * 24 * 3600 * 1000)
#define MIN_TTL_MS		10
#define CONFIG_MAX_BYTES	(1024 * 1024)
#define CONFIG_MAX_LINE		4096
#define PASSWORD_FILE_MAX	4096

static const struct cmd_entry *const cmd_table[] = {
	&cmd_acquire_entry,
	&cmd_release_entry,
	&cmd_extend_entry,
	&cmd_status_entry,
	&cmd_exec_entry,
	&cmd_doctor_entry,
	NULL
};

struct opt_def {
	enum opt_id	 id;
	int		 shortopt;
	const char	*longopt;
	const char	*arg;		/* NULL: takes no value */
	const char	*help;
};

static const struct opt_def opt_defs[] = {
	{ O_URL, 'u', "url", "URL",
	  "Redis to use; repeat it, or separate URLs with spaces, for a "
	  "quorum (default $RLOCK_URL, else " DEFAULT_URL ")" },
	{ O_PASSWORD_FILE, 0, "password-file", "FILE",
	  "read the password from FILE's first line "
	  "(default $RLOCK_PASSWORD, then $REDISCLI_AUTH)" },
	{ O_PREFIX, 0, "prefix", "P",
	  "key prefix (default $RLOCK_PREFIX, else " DEFAULT_PREFIX ")" },
	{ O_CONNECT_TIMEOUT, 0, "connect-timeout", "DUR",
	  "bound on connecting and authenticating (default 2s)" },
	{ O_TIMEOUT, 0, "timeout", "DUR",
	  "bound on one Redis round trip (default 2s)" },
	{ O_JSON, 0, "json", NULL,
	  "machine-readable output on stdout (acquire, status, doctor)" },
	{ O_QUIET, 'q', "quiet", NULL, "only errors on stderr" },
	{ O_VERBOSE, 'v', "verbose", NULL, "timestamped progress on stderr" },
	{ O_HELP, 'h', "help", NULL, "show help and exit" },
	{ O_VERSION, 'V', "version", NULL, "show the version and exit" },
	{ O_TTL, 't', "ttl", "DUR",
	  "lock expiry (default 30s)" },
	{ O_WAIT, 'w', "wait", "DUR",
	  "wait at most DUR for a busy lock; 0: do not wait (default: forever)" },
	{ O_NO_WAIT, 'n', "no-wait", NULL, "same as --wait 0" },
	{ O_CONFLICT_EXIT_CODE, 'E', "conflict-exit-code", "N",
	  "exit status, 0-255, when the lock stays busy (default 1)" },
	{ O_TOKEN, 0, "token", "TOKEN",
	  "take the lock with TOKEN instead of a random one" },
	{ O_FORCE, 0, "force", NULL,
	  "delete the lock whoever holds it, and say whose it was" },
	{ O_HEARTBEAT, 0, "heartbeat", "DUR",
	  "extend the lock this often while the command runs (default TTL/3)" },
	{ O_ON_LOST, 0, "on-lost", "SIG|ignore",
	  "signal for the command if the lock is lost (default TERM)" },
	{ O_KILL_AFTER, 0, "kill-after", "DUR",
	  "then SIGKILL if it is still running after DUR (default 10s)" },
	{ O_FOREGROUND, 0, "foreground", NULL,
	  "run the command in rlock's own process group (no guard)" },
	{ O_COMMAND, 'c', "command", "STRING", "run sh -c STRING" },
	{ O_MIN_HOLD, 0, "min-hold", "DUR",
	  "keep the lock at least DUR after acquiring; let it expire then" },
	{ O_TLS_CA, 0, "tls-ca", "FILE",
	  "verify rediss:// servers against this CA (default: system store)" },
	{ O_TLS_CERT, 0, "tls-cert", "FILE", "client certificate for TLS" },
	{ O_TLS_KEY, 0, "tls-key", "FILE", "private key of --tls-cert" },
	{ O_TLS_SERVER_NAME, 0, "tls-server-name", "NAME",
	  "name the server's certificate must carry (default: the URL's host)" },
	{ O_TLS_INSECURE, 0, "tls-insecure", NULL,
	  "do not verify the server's certificate (testing only)" },
	{ O_WAIT_REPLICAS, 0, "wait-replicas", "N",
	  "after each write, wait (up to --timeout) for N replicas to have it" },
	{ O_SYSLOG, 0, "syslog", NULL,
	  "also log errors and notable events to syslog (daemon facility)" },
	{ O_CONFIG, 0, "config", "FILE",
	  "read settings from FILE (default $RLOCK_CONFIG, else "
	  DEFAULT_CONFIG " if it exists)" },
};
#define N_OPTS	(sizeof opt_defs / sizeof opt_defs[0])

/* ---------------------------------------------------------------- help */

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
		fprintf(f, "  %-30s %s\n", left,
		    ce != NULL && ce->opt_help[d->id] ? ce->opt_help[d->id] :
		    d->help);
	}
}

static void
print_help(FILE *f, const struct cmd_entry *ce)
{
	const struct cmd_entry *const	*c;
	char				 left[64];

	if (ce != NULL) {
		fprintf(f, "usage: rlock [OPTIONS] %s%s%s\n\n%s.\n",
		    ce->name, *ce->args ? " " : "", ce->args, ce->summary);
		if (ce->options != 0) {
			fprintf(f, "\nOptions:\n");
			print_options(f, ce->options, ce);
		}
		fprintf(f, "\nGlobal options:\n");
		print_options(f, OPTS_GLOBAL | OPT(VERSION), ce);
		return;
	}
	fprintf(f, "usage: rlock [OPTIONS] COMMAND [ARGS...]\n\n"
	    "A distributed lock for shell scripts and cron, backed by Redis."
	    "\n\nCommands:\n");
	for (c = cmd_table; *c != NULL; c++) {
		snprintf(left, sizeof left, "%s%s%s", (*c)->name,
		    *(*c)->args ? " " : "", (*c)->args);
		fprintf(f, "  %-30s %s\n", left, (*c)->summary);
	}
	fprintf(f, "\nGlobal options:\n");
	print_options(f, OPTS_GLOBAL | OPT(VERSION), NULL);
	fprintf(f, "\nDurations: 250ms, 1.5s, 30 (seconds), 2m, 1h.\n"
	    "Run 'rlock COMMAND --help' for a command's options; "
	    "see rlock(1).\n");
}

/* ---------------------------------------------------------- utilities */

/* Where the value being applied came from, when it was a config file. */
static char	usage_where[300];

int
cmd_usage_error(const char *fmt, ...)
{
	char	msg[512];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_error("%s%s", usage_where, msg);
	return EXIT_USAGE;
}

int
cmd_fail(struct cmd_ctx *ctx)
{
	if (ctx->err.kind == ERR_INTERRUPTED)
		signals_reraise();
	log_error("%s", ctx->err.msg);
	return err_exit_status(ctx->err.kind);
}

const char *
cmd_printable(const char *s, char *buf, size_t len)
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

int
cmd_check_name(const char *name)
{
	char	why[256], shown[128];

	if (name_check(name, why, sizeof why) == 0)
		return 0;
	cmd_usage_error("invalid lock name '%s': %s; names are 1-255 bytes "
	    "of printable UTF-8 without whitespace, '{' or '}'",
	    cmd_printable(name, shown, sizeof shown), why);
	return -1;
}

const char *
cmd_token(struct cmd_ctx *ctx)
{
	const char	*t = ctx->o.token;

	if (t == NULL && (t = getenv("RLOCK_TOKEN")) != NULL && *t == '\0')
		t = NULL;
	return t;
}

/*
 * lock_wait_fn while acquire waits at a terminal: the holder as of now,
 * for output_wait_show.  Never on a pipe or in cron mail, never with -q
 * (see cmd_lock_init).
 */
static void
show_wait(const struct lock *l, const struct lock_holder *h,
    int64_t waited_ms, int64_t left_ms, void *arg)
{
	int64_t			since = now_mono_ms() - h->seen_at;
	struct output_wait	w;
	struct winsize		ws;

	w.name = l->name;
	w.host = h->host;
	w.pid = h->pid;
	w.command = h->command;
	w.held_ms = h->held_ms >= 0 ? h->held_ms + since : -1;
	w.expires_ms = h->pttl_ms < 0 ? -1 :
	    h->pttl_ms > since ? h->pttl_ms - since : 0;
	w.waited_ms = waited_ms;
	w.left_ms = left_ms;
	w.width = 80;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		w.width = ws.ws_col;
	output_wait_show(&w);
}

void
cmd_lock_init(struct cmd_ctx *ctx, struct lock *l, const char *token)
{
	lock_init(l, &ctx->q, ctx->o.prefix, ctx->o.args[0], token);
	l->wait_replicas = ctx->o.wait_replicas;
	l->wait_timeout_ms = ctx->o.timeout_ms;
	if (isatty(STDERR_FILENO) && log_level() == LOG_LEVEL_NORMAL)
		l->on_wait = show_wait;
}

/* The name of uid from /etc/passwd itself: 0, or -1 to ask NSS instead. */
static int
passwd_name(uid_t uid, char *buf, size_t len)
{
	FILE	*f;
	char	 line[512], *name, *rest, *save;
	int	 rc = -1;

	if ((f = fopen("/etc/passwd", "re")) == NULL)
		return -1;
	while (rc == -1 && fgets(line, sizeof line, f) != NULL) {
		if ((name = strtok_r(line, ":", &save)) == NULL ||
		    strtok_r(NULL, ":", &save) == NULL ||
		    (rest = strtok_r(NULL, ":", &save)) == NULL)
			continue;
		if (strtoul(rest, NULL, 10) == uid && *rest != '\0') {
			snprintf(buf, len, "%s", name);
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

void
cmd_meta(struct lock_meta *m, long long pid, const char *command)
{
	static char	 host[256], user[64];
	struct passwd	*pw;
	const char	*env;

	if (host[0] == '\0' && gethostname(host, sizeof host - 1) == -1)
		snprintf(host, sizeof host, "unknown");
	if (user[0] == '\0') {
		/*
		 * The environment first, then /etc/passwd itself: the name is
		 * only shown, and asking NSS (nscd, LDAP...) costs more than
		 * the whole lock.  NSS only for users not in /etc/passwd.
		 */
		if ((env = getenv("LOGNAME")) != NULL && *env != '\0')
			snprintf(user, sizeof user, "%s", env);
		else if ((env = getenv("USER")) != NULL && *env != '\0')
			snprintf(user, sizeof user, "%s", env);
		else if (passwd_name(geteuid(), user, sizeof user) == 0)
			;
		else if ((pw = getpwuid(geteuid())) != NULL)
			snprintf(user, sizeof user, "%s", pw->pw_name);
		else
			snprintf(user, sizeof user, "%u", geteuid());
	}
	m->host = host;
	m->user = user;
	m->pid = pid;
	m->command = command != NULL ? command : "";
}

void
cmd_give_back(struct lock *l)
{
	struct err	e;
	int		sig = signal_caught;

	/* The run is failing anyway: its own error is the one to report. */
	signal_caught = 0;
	lock_release(l, &e);
	signal_caught = sig;
}

/* ------------------------------------------------------------ parsing */

static int
parse_duration(const char *opt, const char *raw, int64_t *ms, int allow_zero,
    int64_t max)
{
	const char	*why, *v;
	char		 d[32], shown[128];

	v = cmd_printable(raw, shown, sizeof shown);
	if (duration_parse(raw, ms, &why) == -1)
		return cmd_usage_error("invalid duration '%s' for --%s: %s "
		    "(use e.g. 250ms, 1.5s, 30, 2m or 1h)", v, opt, why);
	if (*ms == 0 && !allow_zero)
		return cmd_usage_error("invalid duration '%s' for --%s: it "
		    "must be more than zero", v, opt);
	if (max > 0 && *ms > max)
		return cmd_usage_error("invalid duration '%s' for --%s: the "
		    "limit is %s", v, opt, duration_format(max, d, sizeof d));
	return 0;
}

static int
check_token(const char *t)
{
	const unsigned char	*p;

	if (*t == '\0' || strlen(t) > TOKEN_MAX)
		return cmd_usage_error("invalid --token: it must be 1-%d "
		    "bytes long", TOKEN_MAX);
	for (p = (const unsigned char *)t; *p != '\0'; p++)
		if (*p <= ' ' || *p == 0x7f)
			return cmd_usage_error("invalid --token: byte %zu "
			    "(0x%02x) is whitespace or a control character",
			    (size_t)(p - (const unsigned char *)t) + 1, *p);
	return 0;
}

/* "TERM", "SIGTERM", "term", "15", or "ignore" (0). */
static int
parse_signal(const char *v, int *sig)
{
	const char	*name = v, *abbrev;
	char		 shown[128];
	char		*end;
	long		 n;
	int		 s;

	if (strcasecmp(v, "ignore") == 0) {
		*sig = 0;
		return 0;
	}
	if (*v >= '0' && *v <= '9') {
		n = strtol(v, &end, 10);
		if (*end == '\0' && n > 0 && n < NSIG) {
			*sig = (int)n;
			return 0;
		}
	} else {
		if (strncasecmp(name, "SIG", 3) == 0)
			name += 3;
		for (s = 1; s < NSIG; s++)
			if ((abbrev = sigabbrev_np(s)) != NULL &&
			    strcasecmp(abbrev, name) == 0) {
				*sig = s;
				return 0;
			}
	}
	return cmd_usage_error("invalid signal '%s' for --on-lost: use a "
	    "name such as TERM, INT or KILL, a number, or 'ignore'",
	    cmd_printable(v, shown, sizeof shown));
}

static int
check_prefix(const char *p)
{
	const unsigned char	*s;
	char			 shown[128];

	if (strlen(p) > 200)
		return cmd_usage_error("invalid --prefix: longer than 200 "
		    "bytes");
	for (s = (const unsigned char *)p; *s != '\0'; s++)
		if (*s <= ' ' || *s == 0x7f || *s == '{' || *s == '}')
			return cmd_usage_error("invalid --prefix '%s': byte "
			    "%zu (0x%02x) is whitespace, a control character "
			    "or a brace", cmd_printable(p, shown, sizeof shown),
			    (size_t)(s -
			    (const unsigned char *)p) + 1, *s);
	return 0;
}

/*
 * Append the URLs of v: one, or several separated by whitespace (commas
 * cannot separate them: a sentinel URL has its own).
 */
static int
add_urls(struct opts *o, const char *v)
{
	size_t	n;

	if (v[strspn(v, " \t\n")] == '\0')
		return cmd_usage_error("invalid --url: empty URL");
	for (v += strspn(v, " \t\n"); *v != '\0'; v += strspn(v, " \t\n")) {
		if (o->nurl == MAX_URLS)
			return cmd_usage_error("too many URLs (at most %d)",
			    MAX_URLS);
		n = strcspn(v, " \t\n");
		o->url[o->nurl++] = xstrndup(v, n);
		v += n;
	}
	return 0;
}

static void
clear_urls(struct opts *o)
{
	while (o->nurl > 0)
		free(o->url[--o->nurl]);
}

/* Store one option's value; 0, or the exit status of a usage error. */
static int
apply(struct opts *o, const struct opt_def *d, const char *v)
{
	char	*end, shown[128];
	long	 n;
	int	 rc;

	o->given |= 1ULL << d->id;
	switch (d->id) {
	case O_URL:
		return add_urls(o, v);
	case O_PASSWORD_FILE:
		o->password_file = v;
		return 0;
	case O_PREFIX:
		o->prefix = v;
		return check_prefix(v);
	case O_CONNECT_TIMEOUT:
		return parse_duration(d->longopt, v, &o->connect_timeout_ms, 0,
		    0);
	case O_TIMEOUT:
		return parse_duration(d->longopt, v, &o->timeout_ms, 0, 0);
	case O_JSON:
		o->json = 1;
		return 0;
	case O_QUIET:
		o->verbosity = LOG_LEVEL_QUIET;
		return 0;
	case O_VERBOSE:
		o->verbosity = LOG_LEVEL_VERBOSE;
		return 0;
	case O_HELP:
	case O_VERSION:
		return 0;
	case O_TTL:
		if ((rc = parse_duration(d->longopt, v, &o->ttl_ms, 0,
		    MAX_TTL_MS)) != 0)
			return rc;
		if (o->ttl_ms < MIN_TTL_MS)
			return cmd_usage_error("invalid duration '%s' for --ttl: "
			    "the minimum is %dms (less would be spent on the "
			    "drift margin, 1%% + 2ms, and a round trip)",
			    cmd_printable(v, shown, sizeof shown), MIN_TTL_MS);
		return 0;
	case O_WAIT:
		return parse_duration(d->longopt, v, &o->wait_ms, 1, 0);
	case O_NO_WAIT:
		o->wait_ms = 0;
		return 0;
	case O_CONFLICT_EXIT_CODE:
		errno = 0;
		n = strtol(v, &end, 10);
		if (!isdigit((unsigned char)*v) || *end != '\0' || errno != 0 ||
		    n > 255)
			return cmd_usage_error("invalid exit code '%s' for "
			    "--conflict-exit-code: use a number from 0 to 255",
			    cmd_printable(v, shown, sizeof shown));
		o->conflict_exit_code = (int)n;
		return 0;
	case O_TOKEN:
		o->token = v;
		return check_token(v);
	case O_FORCE:
		o->force = 1;
		return 0;
	case O_HEARTBEAT:
		return parse_duration(d->longopt, v, &o->heartbeat_ms, 0, 0);
	case O_ON_LOST:
		return parse_signal(v, &o->on_lost);
	case O_KILL_AFTER:
		return parse_duration(d->longopt, v, &o->kill_after_ms, 1, 0);
	case O_FOREGROUND:
		o->foreground = 1;
		return 0;
	case O_COMMAND:
		o->command = v;
		return 0;
	case O_MIN_HOLD:
		return parse_duration(d->longopt, v, &o->min_hold_ms, 1,
		    MAX_TTL_MS);
	case O_TLS_CA:
		o->tls.ca = v;
		return 0;
	case O_TLS_CERT:
		o->tls.cert = v;
		return 0;
	case O_TLS_KEY:
		o->tls.key = v;
		return 0;
	case O_TLS_SERVER_NAME:
		o->tls.server_name = v;
		return 0;
	case O_TLS_INSECURE:
		o->tls.insecure = 1;
		return 0;
	case O_CONFIG:
		o->config = v;
		return 0;
	case O_SYSLOG:
		o->syslog = 1;
		return 0;
	case O_WAIT_REPLICAS:
		errno = 0;
		n = strtol(v, &end, 10);
		if (!isdigit((unsigned char)*v) || *end != '\0' || errno != 0 ||
		    n > 1000)
			return cmd_usage_error("invalid --wait-replicas '%s': "
			    "use a number of replicas from 0 to 1000",
			    cmd_printable(v, shown, sizeof shown));
		o->wait_replicas = (int)n;
		return 0;
	case O__COUNT:
		break;
	}
	return cmd_usage_error("internal error: option %d", d->id);
}

static const struct opt_def *
find_long(const char *name, size_t len)
{
	size_t	i;

	for (i = 0; i < N_OPTS; i++)
		if (strlen(opt_defs[i].longopt) == len &&
		    strncmp(opt_defs[i].longopt, name, len) == 0)
			return &opt_defs[i];
	return NULL;
}

static const struct opt_def *
find_short(int c)
{
	size_t	i;

	for (i = 0; i < N_OPTS; i++)
		if (opt_defs[i].shortopt == c)
			return &opt_defs[i];
	return NULL;
}

static const struct cmd_entry *
find_cmd(const char *name)
{
	const struct cmd_entry *const	*c;

	for (c = cmd_table; *c != NULL; c++)
		if (strcmp((*c)->name, name) == 0)
			return *c;
	return NULL;
}

/* "acquire, release, ..." */
static const char *
command_list(void)
{
	static char			 list[256];
	const struct cmd_entry *const	*c;
	size_t				 len = 0;

	for (c = cmd_table; *c != NULL && len < sizeof list; c++)
		len += snprintf(list + len, sizeof list - len, "%s%s",
		    c == cmd_table ? "" : ", ", (*c)->name);
	return list;
}

static int
unknown_cmd(const char *name)
{
	char	shown[128];

	return cmd_usage_error("unknown command '%s'; commands are: %s",
	    cmd_printable(name, shown, sizeof shown), command_list());
}

/*
 * A password given in a URL on the command line shows in ps(1) for as
 * long as it stays in argv.  Once the URL is copied, overwrite the
 * password's bytes in place with '*': what /proc/PID/cmdline shows from
 * then on has none.  (The moment before this runs cannot be helped:
 * --password-file and RLOCK_PASSWORD are the ways never to show it.)
 */
static void
scrub_password(char *arg)
{
	char	*w, *end, *scheme, *at, *colon;

	for (w = arg; *w != '\0'; w = end) {
		w += strspn(w, " \t\n");
		end = w + strcspn(w, " \t\n");
		if ((scheme = strstr(w, "://")) == NULL || scheme >= end)
			continue;
		scheme += 3;
		for (at = NULL, colon = scheme; colon < end; colon++)
			if (*colon == '@')
				at = colon;
		if (at == NULL ||
		    (colon = memchr(scheme, ':', (size_t)(at - scheme))) == NULL)
			continue;
		for (colon++; colon < at; colon++)
			*colon = '*';
	}
}

/*
 * Walk argv once.  The first word that is not an option (or an option's
 * value) is the command; later ones are its arguments.  Returns 0, or the
 * exit status to leave with.
 */
static int
parse_argv(int argc, char **argv, struct opts *o,
    const struct cmd_entry **cep)
{
	const struct opt_def	*d;
	const char		*a, *eq, *v;
	size_t			 len;
	int			 i, rc, dashdash = 0;

	*cep = NULL;
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
					return unknown_cmd(a);
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
		if (a[1] == '-') {
			eq = strchr(a + 2, '=');
			len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			if ((d = find_long(a + 2, len)) == NULL)
				return cmd_usage_error("unknown option '%.*s'; "
				    "see 'rlock --help'", (int)len + 2, a);
			if (d->arg == NULL && eq != NULL)
				return cmd_usage_error("option --%s takes no "
				    "value", d->longopt);
			v = NULL;
			if (d->arg != NULL) {
				if (eq != NULL)
					v = eq + 1;
				else if (i + 1 < argc)
					v = argv[++i];
				else
					return cmd_usage_error("option --%s "
					    "needs a value (%s)", d->longopt,
					    d->arg);
			}
			if ((rc = apply(o, d, v)) != 0)
				return rc;
			if (d->id == O_URL)
				scrub_password((char *)v);
			continue;
		}
		for (a++; *a != '\0'; a++) {
			if ((d = find_short(*a)) == NULL)
				return cmd_usage_error("unknown option '-%c'; "
				    "see 'rlock --help'", *a);
			v = NULL;
			if (d->arg != NULL) {
				if (a[1] != '\0')
					v = a + 1;
				else if (i + 1 < argc)
					v = argv[++i];
				else
					return cmd_usage_error("option -%c "
					    "needs a value (%s)", *a, d->arg);
			}
			if ((rc = apply(o, d, v)) != 0)
				return rc;
			if (d->id == O_URL)
				scrub_password((char *)v);
			if (v != NULL)
				break;
		}
	}
	return 0;
}

/* Does any URL of the list v carry a password? */
static int
url_has_password(const char *v)
{
	struct url	 u;
	char		*copy = xstrdup(v), *w, *save = NULL;
	int		 found = 0;

	for (w = strtok_r(copy, " \t", &save); w != NULL && !found;
	    w = strtok_r(NULL, " \t", &save)) {
		if (url_parse(w, &u, NULL, 0) == 0) {
			found = u.password != NULL;
			url_free(&u);
		}
	}
	free(copy);
	return found;
}

/* A file that holds a password should be for its owner's eyes. */
static void
warn_if_readable(const char *path, const char *what)
{
	struct stat	st;

	if (stat(path, &st) == 0 && (st.st_mode & S_IROTH))
		log_warn("%s %s holds a password and is readable by anyone "
		    "(chmod o-r %s)", what, path, path);
}

/*
 * Read the config file into ctx: --config, else $RLOCK_CONFIG, else
 * /etc/rlock.conf if it exists.  A setting given on the command line
 * wins over the file's; the environment is weighed in settle().
 */
static int
load_config(struct cmd_ctx *ctx)
{
	struct opts		*o = &ctx->o;
	const struct opt_def	*d;
	const char		*path = o->config, *why;
	char			*line, *next, *key, *value;
	uint64_t		 given = o->given, bit;
	size_t			 len = 0;
	int			 lineno = 0, rc, explicit = 1, has_password = 0;

	if (path == NULL && (path = getenv("RLOCK_CONFIG")) != NULL &&
	    *path == '\0')
		path = NULL;
	if (path == NULL) {
		path = DEFAULT_CONFIG;
		explicit = 0;
	}
	if ((rc = read_bounded(path, CONFIG_MAX_BYTES, &ctx->config_text,
	    &len)) == -1 && !explicit && errno == ENOENT)
		return 0;
	if (rc == -1)
		return cmd_usage_error("cannot read the config file %s: %s",
		    path, strerror(errno));
	if (rc == -2)
		return cmd_usage_error("the config file %s is larger than %d "
		    "KiB; is it the right file?", path, CONFIG_MAX_BYTES / 1024);
	/* A NUL would end the text early and hide what follows it. */
	if (memchr(ctx->config_text, '\0', len) != NULL) {
		for (line = ctx->config_text; *line != '\0'; line++)
			lineno += *line == '\n';
		return cmd_usage_error("%s:%d: a NUL byte; the file is not "
		    "text", path, lineno + 1);
	}
	for (line = ctx->config_text; line != NULL; line = next) {
		lineno++;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strlen(line) > CONFIG_MAX_LINE)
			return cmd_usage_error("%s:%d: the line is longer than "
			    "%d bytes", path, lineno, CONFIG_MAX_LINE);
		if ((rc = config_parse_line(line, &key, &value, &why)) == 0)
			continue;
		if (rc == -1)
			return cmd_usage_error("%s:%d: %s", path, lineno, why);
		d = find_long(key, strlen(key));
		if (d == NULL || d->id == O_HELP || d->id == O_VERSION ||
		    d->id == O_CONFIG || d->id == O_TOKEN || d->id == O_FORCE ||
		    d->id == O_COMMAND)
			return cmd_usage_error("%s:%d: unknown key '%s'; keys "
			    "are long options such as url, password-file, "
			    "prefix, ttl or tls-ca", path, lineno, key);
		bit = 1ULL << d->id;
		if (given & bit)
			continue;	/* the command line wins */
		if (d->arg == NULL) {
			if ((rc = config_bool(value)) == -1)
				return cmd_usage_error("%s:%d: %s wants yes "
				    "or no, not '%s'", path, lineno, key,
				    value);
			if (rc == 0)
				continue;
			value = NULL;
		}
		/* A URL list in the file replaces the default, not adds. */
		if (d->id == O_URL && !(o->from_file & bit))
			clear_urls(o);
		if (d->id == O_URL && url_has_password(value))
			has_password = 1;
		snprintf(usage_where, sizeof usage_where, "%s:%d: ", path,
		    lineno);
		rc = apply(o, d, value);
		usage_where[0] = '\0';
		if (rc != 0)
			return rc;
		o->from_file |= bit;
	}
	o->given = given;
	if (has_password)
		warn_if_readable(path, "the config file");
	return 0;
}

/*
 * The password from --password-file: its first line, without the newline.
 * Read with a bound: the file may be a device or a pipe that never ends.
 */
static int
read_password_file(const char *path, char **out)
{
	char	*text;
	size_t	 len, n;
	int	 rc;

	if ((rc = read_bounded(path, PASSWORD_FILE_MAX, &text, &len)) == -1)
		return cmd_usage_error("cannot read --password-file %s: %s",
		    path, strerror(errno));
	if (rc == -2)
		return cmd_usage_error("--password-file %s is larger than %d "
		    "bytes; it should hold the password on its first line",
		    path, PASSWORD_FILE_MAX);
	n = strcspn(text, "\n");
	if (memchr(text, '\0', n < len ? n : len) != NULL) {
		explicit_bzero(text, len);
		free(text);
		return cmd_usage_error("--password-file %s: a NUL byte on "
		    "the first line; the file is not text", path);
	}
	text[n] = '\0';
	while (n > 0 && text[n - 1] == '\r')
		text[--n] = '\0';
	if (n == 0) {
		explicit_bzero(text, len);
		free(text);
		return cmd_usage_error("--password-file %s holds no password "
		    "on its first line", path);
	}
	/* Only the first line is kept: wipe whatever followed it. */
	explicit_bzero(text + n, len - n);
	warn_if_readable(path, "--password-file");
	*out = text;
	return 0;
}

/* A file option names a file we can read, or it is a usage error now. */
static int
check_readable(const char *opt, const char *path)
{
	FILE	*f;

	if (path == NULL)
		return 0;
	if ((f = fopen(path, "r")) == NULL)
		return cmd_usage_error("cannot read %s %s: %s", opt, path,
		    strerror(errno));
	fclose(f);
	return 0;
}

static const char *
env(const char *name)
{
	const char	*v = getenv(name);

	return v != NULL && *v != '\0' ? v : NULL;
}

/*
 * Which of urls[0..i-1] names the server urls[i] names, as written (the
 * database, user and password aside): -1 if none.  Two names for one
 * server are found once connected (quorum.c compares run_ids).
 */
static int
same_server(const struct url *urls, int i)
{
	const struct url	*a, *b = &urls[i];
	int			 j;

	for (j = 0; j < i; j++) {
		a = &urls[j];
		if (a->scheme == URL_UNIX || b->scheme == URL_UNIX) {
			if (a->scheme == b->scheme &&
			    strcmp(a->path, b->path) == 0)
				return j;
		} else if (a->scheme == URL_SENTINEL ||
		    b->scheme == URL_SENTINEL) {
			if (a->scheme == b->scheme &&
			    strcmp(a->master, b->master) == 0 &&
			    strcasecmp(a->sentinels[0].host,
			    b->sentinels[0].host) == 0 &&
			    a->sentinels[0].port == b->sentinels[0].port)
				return j;
		} else if (strcasecmp(a->host, b->host) == 0 &&
		    a->port == b->port)
			return j;
	}
	return -1;
}

/*
 * Weigh flag > environment > config file > default for each setting, and
 * check what the URLs and credentials say.
 */
static int
settle(struct cmd_ctx *ctx)
{
	struct opts	*o = &ctx->o;
	const char	*v, *from = "--url";
	char		 why[256];
	int		 i, j, rc, pw_flag;

	if (!(o->given & OPT(URL)) && (v = env("RLOCK_URL")) != NULL) {
		clear_urls(o);
		if ((rc = add_urls(o, v)) != 0)
			return rc;
		from = "RLOCK_URL";
	} else if (o->from_file & OPT(URL))
		from = "url in the config file";
	if (o->nurl == 0)
		add_urls(o, DEFAULT_URL);
	for (i = 0; i < o->nurl; i++) {
		if (url_parse(o->url[i], &ctx->urls[i], why, sizeof why) == -1)
			return strchr(o->url[i], ',') != NULL &&
			    strncmp(o->url[i], "redis-sentinel:", 15) != 0 ?
			    cmd_usage_error("invalid %s: %s (to give several "
			    "servers, separate URLs with spaces or repeat -u)",
			    from, why) : o->nurl == 1 ?
			    cmd_usage_error("invalid %s: %s", from, why) :
			    cmd_usage_error("invalid %s (URL %d of %d): %s",
			    from, i + 1, o->nurl, why);
		ctx->nurls++;
		if ((j = same_server(ctx->urls, i)) >= 0)
			return cmd_usage_error("%s and %s name the same server; "
			    "each server counts once in a quorum, so give "
			    "each only once", ctx->urls[j].display,
			    ctx->urls[i].display);
	}
	if (!(o->given & OPT(PREFIX)) && (v = getenv("RLOCK_PREFIX")) != NULL)
		o->prefix = v;
	if (o->prefix == NULL)
		o->prefix = DEFAULT_PREFIX;
	if ((rc = check_prefix(o->prefix)) != 0)
		return rc;

	/*
	 * --password-file on the command line > the URL's password >
	 * RLOCK_PASSWORD > REDISCLI_AUTH > password-file in the config file.
	 * (redis.c prefers the URL's password to ctx->password.)
	 */
	pw_flag = (o->given & OPT(PASSWORD_FILE)) != 0;
	if (pw_flag) {
		if ((rc = read_password_file(o->password_file,
		    &ctx->password)) != 0)
			return rc;
		for (i = 0; i < ctx->nurls; i++) {
			free(ctx->urls[i].password);
			ctx->urls[i].password = NULL;
		}
	} else if ((v = env("RLOCK_PASSWORD")) != NULL ||
	    (v = env("REDISCLI_AUTH")) != NULL)
		ctx->password = xstrdup(v);
	else if (o->password_file != NULL &&
	    (rc = read_password_file(o->password_file, &ctx->password)) != 0)
		return rc;
	if ((rc = check_readable("--tls-ca", o->tls.ca)) != 0 ||
	    (rc = check_readable("--tls-cert", o->tls.cert)) != 0 ||
	    (rc = check_readable("--tls-key", o->tls.key)) != 0)
		return rc;
	if (o->tls.insecure)
		log_warn("--tls-insecure: the server's certificate is not "
		    "checked, so anyone on the path can pose as the server");
	ctx->ropts.password = ctx->password;
	ctx->ropts.identify = ctx->nurls > 1;
	ctx->ropts.connect_timeout_ms = o->connect_timeout_ms;
	ctx->ropts.timeout_ms = o->timeout_ms;
	ctx->ropts.tls = &o->tls;
	return 0;
}

int
cmd_connect(struct cmd_ctx *ctx)
{
	if (ctx->connected)
		return 0;
	if (quorum_open(&ctx->q, ctx->urls, ctx->nurls, &ctx->ropts,
	    &ctx->err) == -1) {
		quorum_close(&ctx->q);
		return -1;
	}
	ctx->connected = 1;
	return 0;
}

static void
ctx_free(struct cmd_ctx *ctx)
{
	int	i;

	if (ctx->connected)
		quorum_close(&ctx->q);
	for (i = 0; i < ctx->nurls; i++)
		url_free(&ctx->urls[i]);
	if (ctx->password != NULL) {
		explicit_bzero(ctx->password, strlen(ctx->password));
		free(ctx->password);
	}
	free(ctx->o.args);
	clear_urls(&ctx->o);
	free(ctx->config_text);
}

int
cmd_main(int argc, char **argv)
{
	struct cmd_ctx		 ctx;
	struct opts		*o = &ctx.o;
	const struct cmd_entry	*ce;
	const struct opt_def	*d;
	uint64_t		 stray;
	size_t			 i;
	int			 rc;

	/* Before anything is opened: see std_fds_open. */
	if (std_fds_open() == -1)
		return EXIT_SOFTWARE;
	memset(&ctx, 0, sizeof ctx);
	/* Before parsing: a cron job's usage error belongs in syslog too. */
	for (i = 1; i < (size_t)argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--syslog") == 0)
			log_open_syslog();
	o->connect_timeout_ms = DEFAULT_TIMEOUT_MS;
	o->timeout_ms = DEFAULT_TIMEOUT_MS;
	o->ttl_ms = LOCK_DEFAULT_TTL_MS;
	o->wait_ms = -1;
	o->conflict_exit_code = EXIT_BUSY;
	o->on_lost = SIGTERM;
	o->kill_after_ms = 10000;

	if ((rc = parse_argv(argc, argv, o, &ce)) != 0)
		goto out;
	log_set_level(o->verbosity);
	if (o->given & OPT(VERSION)) {
		printf("rlock %s\n", PACKAGE_VERSION);
		goto out;
	}
	if (o->given & OPT(HELP)) {
		print_help(stdout, ce);
		goto out;
	}
	if (ce == NULL) {
		rc = cmd_usage_error("no command given; commands are: %s; "
		    "see 'rlock --help'", command_list());
		goto out;
	}
	if ((stray = o->given & ~(ce->options | OPTS_GLOBAL)) != 0) {
		for (i = 0; i < N_OPTS; i++) {
			d = &opt_defs[i];
			if (stray & (1ULL << d->id))
				break;
		}
		rc = cmd_usage_error("option --%s does not apply to %s; see "
		    "'rlock %s --help'", opt_defs[i].longopt, ce->name,
		    ce->name);
		goto out;
	}
	if (o->nargs < ce->min_args) {
		rc = cmd_usage_error("%s needs %s; usage: rlock %s %s",
		    ce->name, ce->args, ce->name, ce->args);
		goto out;
	}
	if (ce->max_args >= 0 && o->nargs > ce->max_args) {
		rc = cmd_usage_error("unexpected argument '%s'; usage: rlock "
		    "%s%s%s", o->args[ce->max_args], ce->name,
		    *ce->args ? " " : "", ce->args);
		goto out;
	}
	for (i = 0; i < (size_t)o->nargs; i++)
		if (cmd_check_name(o->args[i]) == -1) {
			rc = EXIT_USAGE;
			goto out;
		}
	ctx.entry = ce;
	if ((rc = load_config(&ctx)) != 0)
		goto out;
	log_set_level(o->verbosity);
	log_set_json(o->json);
	if (o->syslog)
		log_open_syslog();
	if ((rc = settle(&ctx)) != 0)
		goto out;
	signals_catch();
	rc = ce->exec(&ctx);
out:
	ctx_free(&ctx);
	return rc;
}
