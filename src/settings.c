/* settings.c: where each setting comes from, and which one wins. */

/*
 * A setting comes from, in order of precedence: its flag on the command
 * line, the environment, the config file, the default.  The config file
 * is read after argv (so a flag can skip a bad line's value but not its
 * syntax); the environment, and the defaults that yield to it, are
 * weighed last, in settings_settle, which then turns the URLs, the
 * password and the TLS files into what quorum.c connects with.  Every problem is a usage
 * error; one in the config file names its file and line.  Files are read
 * with a bound: a path may name a device or a pipe that never ends.
 */

#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "conffile.h"
#include "err.h"
#include "lock.h"
#include "log.h"
#include "options.h"
#include "settings.h"
#include "util.h"

#define DEFAULT_TIMEOUT_MS	2000
#define DEFAULT_KILL_AFTER_MS	10000
/* The history (see rlock log): events kept per lock, and for how long. */
#define DEFAULT_HISTORY_LENGTH	100
#define DEFAULT_HISTORY_EXPIRY_MS	(30LL * 24 * 3600 * 1000)
/* rlock log: events shown per lock. */
#define DEFAULT_LOG_COUNT	20
#define CONFIG_MAX_BYTES	(1024 * 1024)
#define CONFIG_MAX_LINE		4096
#define PASSWORD_FILE_MAX	4096

void
settings_defaults(struct opts *o)
{
	o->connect_timeout_ms = DEFAULT_TIMEOUT_MS;
	o->timeout_ms = DEFAULT_TIMEOUT_MS;
	o->ttl_ms = LOCK_DEFAULT_TTL_MS;
	o->wait_ms = -1;
	o->conflict_exit_code = EXIT_BUSY;
	o->on_lost = SIGTERM;
	o->kill_after_ms = DEFAULT_KILL_AFTER_MS;
	o->history_length = DEFAULT_HISTORY_LENGTH;
	o->history_expiry_ms = DEFAULT_HISTORY_EXPIRY_MS;
	o->count = DEFAULT_LOG_COUNT;
}

/* An environment variable; empty is unset, as for every source. */
static const char *
env(const char *name)
{
	const char	*v = getenv(name);

	return v != NULL && *v != '\0' ? v : NULL;
}

int
settings_apply_env(struct opts *o, const char *longopt, const char *name)
{
	const struct opt_def	*d = options_find(longopt, strlen(longopt));
	const struct opt_where	 w = { .file = name, .line = 0 };
	const char		*v;

	if (d == NULL || (o->given & (1ULL << d->id)) ||
	    (v = env(name)) == NULL)
		return 0;
	if (d->id == O_URL)
		options_clear_urls(o);	/* it replaces the file's, not adds */
	return options_apply(o, d, v, &w);
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
 * A file rlock was told to read and cannot.  Not allowed to is not a
 * mistake in the command line, which works as another user: it is 77
 * (EX_NOPERM) with the remedy, and any other reason a usage error.
 */
static int
unreadable(const char *what, const char *path, int e)
{
	char	shown[256];

	/* A path is the user's, but may hold any byte: shown escaped. */
	options_printable(path, shown, sizeof shown);
	if (e != EACCES && e != EPERM)
		return options_usage_error(NULL, "cannot read %s %s: %s", what,
		    shown, strerror(e));
	log_error("cannot read %s %s: %s (rlock runs as uid %u): let this "
	    "user read it, e.g. with the group rlock (chgrp rlock %s; chmod "
	    "640 %s; usermod -aG rlock USER), see rlock.conf(5)", what, shown,
	    strerror(e), (unsigned)geteuid(), shown, shown);
	return EXIT_NOPERM;
}

/* A file that must be a regular file is something else: say what. */
static int
not_regular(const char *what, const char *path)
{
	char	shown[256];

	options_printable(path, shown, sizeof shown);
	return options_usage_error(NULL, "%s %s is a %s, not a regular file",
	    what, shown, file_kind(path));
}

/*
 * The config file chooses the server and what a lost lock does
 * (on-lost = ignore): whoever can write it can do both.
 */
static void
warn_if_writable(const char *path)
{
	struct stat	st;
	char		shown[256];

	if (stat(path, &st) == 0 && (st.st_mode & (S_IWGRP | S_IWOTH))) {
		options_printable(path, shown, sizeof shown);
		log_warn("the config file %s is writable by %s, who can point "
		    "rlock at another server or set on-lost = ignore (chmod "
		    "go-w %s)", shown, (st.st_mode & S_IWOTH) ? "anyone" :
		    "its group", shown);
	}
}

/* ------------------------------------------------------- config file */

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
	explicit_bzero(copy, strlen(v));
	free(copy);
	return found;
}

/*
 * Read the config file into *text.  0 (with *text still NULL when the
 * default file does not exist, or the file is /dev/null), or the exit
 * status of a usage error.
 */
static int
read_config(const char *path, int explicit, char **text)
{
	struct opt_where	 w;
	const char		*p;
	size_t			 len = 0;
	int			 rc;

	if ((rc = read_bounded(path, CONFIG_MAX_BYTES, text, &len)) == -1 &&
	    !explicit && errno == ENOENT)
		return 0;
	if (rc == -1)
		return unreadable("the config file", path, errno);
	/*
	 * /dev/null is no configuration at all, as for ssh -F /dev/null or
	 * git config --file /dev/null: nothing is read, and nothing warned
	 * about (the device is writable by anyone).  Any other device is
	 * still a mistake.
	 */
	if (rc == -3 && is_null_device(path))
		return 0;
	if (rc == -3)
		return not_regular("the config file", path);
	if (rc == -2)
		return options_usage_error(NULL, "the config file %s is larger "
		    "than %d KiB; is it the right file?", path,
		    CONFIG_MAX_BYTES / 1024);
	/* Its URLs may hold a password: kept out of core dumps. */
	p = *text;
	*text = secret_strndup(p, len);
	explicit_bzero((char *)p, len);
	free((char *)p);
	/* A NUL would end the text early and hide what follows it. */
	if (memchr(*text, '\0', len) != NULL) {
		w.file = path;
		w.line = 1;
		for (p = *text; *p != '\0'; p++)
			w.line += *p == '\n';
		return options_usage_error(&w, "a NUL byte; the file is not "
		    "text");
	}
	return 0;
}

/*
 * Apply one line of the config file to o, unless the command line gave
 * that setting (its bit in given).  0, or the exit status of a usage
 * error.
 */
static int
apply_line(struct opts *o, char *line, uint64_t given,
    const struct opt_where *w, int *has_password)
{
	const struct opt_def	*d;
	char			 why[160];
	char			*key, *value;
	uint64_t		 bit;
	int			 rc;

	if (strlen(line) > CONFIG_MAX_LINE)
		return options_usage_error(w, "the line is longer than %d bytes",
		    CONFIG_MAX_LINE);
	if ((rc = config_parse_line(line, &key, &value, why, sizeof why)) == 0)
		return 0;
	if (rc == -1)
		return options_usage_error(w, "%s", why);
	d = options_find(key, strlen(key));
	if (d == NULL || (d->flags & OPTF_ARGV_ONLY))
		return options_usage_error(w, "unknown key '%s'; keys are long "
		    "options such as url, password-file, prefix, ttl or tls-ca",
		    key);
	bit = 1ULL << d->id;
	if (given & bit)
		return 0;	/* the command line wins */
	if (options_empty_is_unset(d, value))
		return 0;	/* as if the line were not there */
	if (d->arg == NULL) {
		if ((rc = config_bool(value)) == -1)
			return options_usage_error(w, "%s wants yes or no, not "
			    "'%s'", key, value);
		if (rc == 0)
			return 0;
		value = NULL;
	}
	/* A URL list in the file replaces the default, not adds. */
	if (d->id == O_URL && !(o->from_file & bit))
		options_clear_urls(o);
	if (d->id == O_URL && url_has_password(value))
		*has_password = 1;
	if ((rc = options_apply(o, d, value, w)) != 0)
		return rc;
	o->from_file |= bit;
	return 0;
}

int
settings_read_config(struct settings *s, struct opts *o)
{
	struct opt_where	 w;
	const char		*path = o->config;
	char			*line, *next;
	uint64_t		 given = o->given;
	int			 rc, explicit = 1, has_password = 0;

	if (path == NULL && (path = getenv("RLOCK_CONFIG")) != NULL &&
	    *path == '\0')
		path = NULL;
	if (path == NULL) {
		path = DEFAULT_CONFIG;
		explicit = 0;
	}
	if ((rc = read_config(path, explicit, &s->config_text)) != 0 ||
	    s->config_text == NULL)
		return rc;
	warn_if_writable(path);
	w.file = path;
	w.line = 0;
	for (line = s->config_text; line != NULL; line = next) {
		w.line++;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if ((rc = apply_line(o, line, given, &w, &has_password)) != 0)
			return rc;
	}
	/* What the file set is not given: the environment wins over it. */
	o->given = given;
	if (has_password)
		warn_if_readable(path, "the config file");
	return 0;
}

/* ------------------------------------------------------------ settle */

/*
 * The password from --password-file: its first line, without the newline.
 * Read with a bound: the file may be a device or a pipe that never ends.
 */
static int
read_secret_file(const char *opt, const char *path, char **out)
{
	char	*text;
	size_t	 len, n;
	int	 rc;

	if ((rc = read_bounded(path, PASSWORD_FILE_MAX, &text, &len)) == -1)
		return unreadable(opt, path, errno);
	if (rc == -3)
		return not_regular(opt, path);
	if (rc == -2)
		return options_usage_error(NULL, "%s %s is larger than %d "
		    "bytes; it should hold the password on its first line",
		    opt, path, PASSWORD_FILE_MAX);
	n = strcspn(text, "\n");
	if (memchr(text, '\0', n < len ? n : len) != NULL) {
		explicit_bzero(text, len);
		free(text);
		return options_usage_error(NULL, "%s %s: a NUL byte on "
		    "the first line; the file is not text", opt, path);
	}
	text[n] = '\0';
	while (n > 0 && text[n - 1] == '\r')
		text[--n] = '\0';
	if (n == 0) {
		explicit_bzero(text, len);
		free(text);
		return options_usage_error(NULL, "%s %s holds no password "
		    "on its first line", opt, path);
	}
	/* Kept where a core dump does not look; the read buffer wiped. */
	*out = secret_strndup(text, n);
	explicit_bzero(text, len);
	free(text);
	warn_if_readable(path, opt);
	return 0;
}

static int
read_password_file(const char *path, char **out)
{
	return read_secret_file("--password-file", path, out);
}

/*
 * A file option names a regular file we can read, or it is a usage error
 * now (opened without blocking: OpenSSL would wait on a FIFO forever).
 */
static int
check_readable(const char *opt, const char *path)
{
	struct stat	st;
	int		fd, regular;

	if (path == NULL)
		return 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
		return unreadable(opt, path, errno);
	regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	close(fd);
	return regular ? 0 : not_regular(opt, path);
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

/* --url > $RLOCK_URL > url in the config file > the default; parsed. */
static int
settle_urls(struct settings *s, struct opts *o)
{
	const char	*from = "--url";
	char		 why[256];
	int		 i, j, rc;

	if (!(o->given & OPT(URL)) && env("RLOCK_URL") != NULL) {
		if ((rc = settings_apply_env(o, "url", "RLOCK_URL")) != 0)
			return rc;
		from = "RLOCK_URL";
	} else if (o->from_file & OPT(URL))
		from = "url in the config file";
	if (o->nurl == 0)
		options_add_urls(o, DEFAULT_URL, NULL);
	for (i = 0; i < o->nurl; i++) {
		if (url_parse(o->url[i], &s->urls[i], why, sizeof why) == -1)
			return o->nurl == 1 ?
			    options_usage_error(NULL, "invalid %s: %s", from,
			    why) :
			    options_usage_error(NULL, "invalid %s (URL %d of "
			    "%d): %s", from, i + 1, o->nurl, why);
		s->nurls++;
		if (s->urls[i].nseeds > 0 && o->nurl > 1)
			return options_usage_error(NULL, "%s is a seed list: it "
			    "names one cluster, not a quorum; give it as the "
			    "only URL (or give a quorum's servers one URL "
			    "each)", s->urls[i].display);
		if ((j = same_server(s->urls, i)) >= 0)
			return options_usage_error(NULL, "%s and %s name the "
			    "same server; each server counts once in a quorum, "
			    "so give each only once", s->urls[j].display,
			    s->urls[i].display);
	}
	return 0;
}

/*
 * --password-file on the command line > the URL's password >
 * RLOCK_PASSWORD > REDISCLI_AUTH > password-file in the config file.
 * (redis.c prefers the URL's password to s->password.)
 */
static int
settle_password(struct settings *s, struct opts *o)
{
	const char	*v;
	int		 i, rc;

	if (o->given & OPT(PASSWORD_FILE)) {
		if ((rc = read_password_file(o->password_file,
		    &s->password)) != 0)
			return rc;
		for (i = 0; i < s->nurls; i++) {
			secret_free(s->urls[i].password);
			s->urls[i].password = NULL;
		}
	} else if ((v = env("RLOCK_PASSWORD")) != NULL ||
	    (v = env("REDISCLI_AUTH")) != NULL)
		s->password = secret_strdup(v);
	else if (o->password_file != NULL &&
	    (rc = read_password_file(o->password_file, &s->password)) != 0)
		return rc;
	return 0;
}

/*
 * The sentinels' own password: --sentinel-password-file on the command
 * line > RLOCK_SENTINEL_PASSWORD > sentinel-password-file in the config
 * file.  None: the sentinels are sent the master's, if they ask.  A user
 * without a password says nothing AUTH could use: a usage error.
 */
static int
settle_sentinel_password(struct settings *s, struct opts *o)
{
	const char	*v;
	int		 rc;

	if (o->given & OPT(SENTINEL_PASSWORD_FILE)) {
		if ((rc = read_secret_file("--sentinel-password-file",
		    o->sentinel_password_file, &s->sentinel_password)) != 0)
			return rc;
	} else if ((v = env("RLOCK_SENTINEL_PASSWORD")) != NULL)
		s->sentinel_password = secret_strdup(v);
	else if (o->sentinel_password_file != NULL &&
	    (rc = read_secret_file("--sentinel-password-file",
	    o->sentinel_password_file, &s->sentinel_password)) != 0)
		return rc;
	if (o->sentinel_user != NULL && s->sentinel_password == NULL)
		return options_usage_error(NULL, "--sentinel-user needs the "
		    "sentinels' password too: give it with "
		    "--sentinel-password-file or RLOCK_SENTINEL_PASSWORD");
	return 0;
}

int
settings_settle(struct settings *s, struct opts *o)
{
	int		 rc;

	if ((rc = settle_urls(s, o)) != 0)
		return rc;
	/* Checked by --prefix's own parser, as the flag and the file are. */
	if ((rc = settings_apply_env(o, "prefix", "RLOCK_PREFIX")) != 0)
		return rc;
	if (o->prefix == NULL)
		o->prefix = DEFAULT_PREFIX;
	if ((rc = settle_password(s, o)) != 0 ||
	    (rc = settle_sentinel_password(s, o)) != 0)
		return rc;
	if ((rc = check_readable("--tls-ca", o->tls.ca)) != 0 ||
	    (rc = check_readable("--tls-cert", o->tls.cert)) != 0 ||
	    (rc = check_readable("--tls-key", o->tls.key)) != 0)
		return rc;
	if (o->tls.insecure)
		log_warn("--tls-insecure: the server's certificate is not "
		    "checked, so anyone on the path can pose as the server");
	s->ropts.password = s->password;
	s->ropts.sentinel_user = o->sentinel_user;
	s->ropts.sentinel_password = s->sentinel_password;
	s->ropts.identify = s->nurls > 1;
	s->ropts.connect_timeout_ms = o->connect_timeout_ms;
	s->ropts.timeout_ms = o->timeout_ms;
	s->ropts.tls = &o->tls;
	return 0;
}
