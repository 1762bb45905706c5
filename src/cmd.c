/* cmd.c: the command table, precedence, and what every command shares. */

/*
 * options.c parses argv against the table of every option; here each
 * command says which ones it takes, and one that does not belong is a
 * usage error naming the command.  Precedence is flag > environment >
 * config file > default, applied once parsing is done.  Only this layer
 * (and the cmd-*.c files) print errors and choose exit statuses.
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

#define DEFAULT_TIMEOUT_MS	2000
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

/* ---------------------------------------------------------- utilities */

int
cmd_usage_error(const char *fmt, ...)
{
	va_list	ap;
	int	rc;

	va_start(ap, fmt);
	rc = options_usage_verror(NULL, fmt, ap);
	va_end(ap);
	return rc;
}

int
cmd_fail(struct cmd_ctx *ctx)
{
	if (ctx->err.kind == ERR_INTERRUPTED)
		signals_reraise();
	log_error("%s", ctx->err.msg);
	return err_exit_status(ctx->err.kind);
}

int
cmd_check_name(const char *name)
{
	char	why[256], shown[128];

	if (name_check(name, why, sizeof why) == 0)
		return 0;
	cmd_usage_error("invalid lock name '%s': %s; names are 1-255 bytes "
	    "of printable UTF-8 without whitespace, '{' or '}'",
	    options_printable(name, shown, sizeof shown), why);
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

/* The command called name, or NULL once a usage error has said so. */
static const struct cmd_entry *
find_cmd(const char *name)
{
	const struct cmd_entry *const	*c;
	char				 shown[128];

	for (c = cmd_table; *c != NULL; c++)
		if (strcmp((*c)->name, name) == 0)
			return *c;
	cmd_usage_error("unknown command '%s'; commands are: %s",
	    options_printable(name, shown, sizeof shown), command_list());
	return NULL;
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
	struct opt_where	 where;
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
		d = options_find(key, strlen(key));
		if (d == NULL || (d->flags & OPTF_ARGV_ONLY))
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
			options_clear_urls(o);
		if (d->id == O_URL && url_has_password(value))
			has_password = 1;
		where.file = path;
		where.line = lineno;
		if ((rc = options_apply(o, d, value, &where)) != 0)
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
		options_clear_urls(o);
		if ((rc = options_add_urls(o, v, NULL)) != 0)
			return rc;
		from = "RLOCK_URL";
	} else if (o->from_file & OPT(URL))
		from = "url in the config file";
	if (o->nurl == 0)
		options_add_urls(o, DEFAULT_URL, NULL);
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
	if ((rc = options_check_prefix(o->prefix, NULL)) != 0)
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
	options_clear_urls(&ctx->o);
	free(ctx->config_text);
}

int
cmd_main(int argc, char **argv)
{
	struct cmd_ctx		 ctx;
	struct opts		*o = &ctx.o;
	const struct cmd_entry	*ce;
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

	if ((rc = options_parse(o, argc, argv, find_cmd, &ce)) != 0)
		goto out;
	log_set_level(o->verbosity);
	if (o->given & OPT(VERSION)) {
		printf("rlock %s\n", PACKAGE_VERSION);
		goto out;
	}
	if (o->given & OPT(HELP)) {
		options_help(stdout, ce, cmd_table);
		goto out;
	}
	if (ce == NULL) {
		rc = cmd_usage_error("no command given; commands are: %s; "
		    "see 'rlock --help'", command_list());
		goto out;
	}
	if ((stray = o->given & ~(ce->options | OPTS_GLOBAL)) != 0) {
		rc = cmd_usage_error("option --%s does not apply to %s; see "
		    "'rlock %s --help'", options_first_name(stray), ce->name,
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
