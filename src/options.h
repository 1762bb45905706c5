/* options.h: every option rlock takes, its table, and the argv parser. */
#ifndef RLOCK_OPTIONS_H
#define RLOCK_OPTIONS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "netopts.h"	/* struct tls_opts */

#define MAX_URLS	16

/* The defaults the help text names; settings.c applies them. */
#define DEFAULT_URL		"redis://127.0.0.1:6379"
#define DEFAULT_PREFIX		"rlock:"
#define DEFAULT_CONFIG		"/etc/rlock.conf"

/* Every option rlock knows; each command says which of them it takes. */
enum opt_id {
	O_URL,
	O_PASSWORD_FILE,
	O_PREFIX,
	O_CONNECT_TIMEOUT,
	O_TIMEOUT,
	O_JSON,
	O_QUIET,
	O_VERBOSE,
	O_HELP,
	O_VERSION,
	O_TTL,
	O_WAIT,
	O_NO_WAIT,
	O_CONFLICT_EXIT_CODE,
	O_TOKEN,
	O_FORCE,
	O_HEARTBEAT,
	O_ON_LOST,
	O_KILL_AFTER,
	O_FOREGROUND,
	O_COMMAND,
	O_MIN_HOLD,
	O_TLS_CA,
	O_TLS_CERT,
	O_TLS_KEY,
	O_TLS_SERVER_NAME,
	O_TLS_INSECURE,
	O_CONFIG,
	O_WAIT_REPLICAS,
	O_SYSLOG,
	O_FIFO,
	O_PENDING,
	O_REPLACE,
	O_NO_REPLACE,
	O_MAX_RUNTIME,
	O_LIMIT,
	O_SHARED,
	O_NO_HISTORY,
	O_HISTORY_LENGTH,
	O_HISTORY_EXPIRY,
	O_COUNT,
	O_SINCE,
	O_FORMAT,
	O_LEFTOVERS,
	O_REASON,
	O_RECORD,
	O_LABEL,
	O_HOLD,
	O_PID,
	O_SENTINEL_USER,
	O_SENTINEL_PASSWORD_FILE,
	O_EVERY,
	O_RETRY_FAILED,
	O_SPLAY,
	O_OVERDUE,
	O_FAILING,
	O_GRACE,
	O_FOR,
	O_CRON,
	O_CRON_TZ,
	O__COUNT
};
#define OPT(x)		(1ULL << O_##x)
/* What the commands that write history (see rlock log) take. */
#define OPTS_HISTORY	(OPT(NO_HISTORY) | OPT(HISTORY_LENGTH) | \
			 OPT(HISTORY_EXPIRY))
#define OPTS_GLOBAL	(OPT(URL) | OPT(PASSWORD_FILE) | OPT(PREFIX) | \
			 OPT(CONNECT_TIMEOUT) | OPT(TIMEOUT) | OPT(JSON) | \
			 OPT(QUIET) | OPT(VERBOSE) | OPT(HELP) | \
			 OPT(TLS_CA) | OPT(TLS_CERT) | OPT(TLS_KEY) | \
			 OPT(TLS_SERVER_NAME) | OPT(TLS_INSECURE) | OPT(CONFIG) | \
			 OPT(SYSLOG) | OPT(SENTINEL_USER) | \
			 OPT(SENTINEL_PASSWORD_FILE))

struct opts {
	uint64_t	 given;		/* OPT() bits seen on the command line */
	uint64_t	 from_file;	/* OPT() bits set by the config file */
	char		*url[MAX_URLS];	/* owned copies */
	int		 nurl;
	const char	*password_file;
	const char	*sentinel_user;		/* the sentinels' own ACL user */
	const char	*sentinel_password_file;
	const char	*prefix;
	int64_t		 connect_timeout_ms;
	int64_t		 timeout_ms;
	int		 json;
	int		 verbosity;
	int64_t		 ttl_ms;
	int64_t		 wait_ms;	/* -1: forever */
	int		 conflict_exit_code;
	const char	*token;
	int		 force;
	int64_t		 heartbeat_ms;	/* 0: TTL/3 */
	int		 on_lost;	/* signal; 0: ignore */
	int64_t		 kill_after_ms;
	int		 foreground;
	const char	*command;	/* -c */
	int64_t		 min_hold_ms;
	struct tls_opts	 tls;
	const char	*config;
	int		 wait_replicas;
	int		 syslog;
	int		 fifo;
	int		 pending;	/* exec --pending N: waiters kept; 0: all */
	int		 replace;	/* exec --replace: stop the holder */
	int		 no_replace;	/* exec --no-replace: never stopped so */
	int64_t		 max_runtime_ms;	/* 0: no limit */
	int		 limit;		/* --limit: holders at once; 0: one */
	int		 shared;	/* --shared: a reader */
	int		 no_history;
	int		 history_length;	/* events kept per lock */
	int64_t		 history_expiry_ms;	/* after the newest */
	int		 count;		/* log -n */
	int64_t		 since_ms;	/* log --since; 0: all */
	const char	*format;	/* status --format */
	const char	*reason;	/* release --reason */
	int		 leftovers;	/* exec: enum leftovers (supervise.h) */
	int		 record;	/* exec --record: enum record */
	const char	*label;		/* exec --label: recorded instead */
	int		 hold;		/* acquire --hold: leave a keeper */
	int		 pid;		/* acquire --hold --pid: the owner; 0: caller */
	int64_t		 every_ms;	/* exec --every: a start a period; 0: none */
	int		 retry_failed;	/* exec --retry-failed */
	int64_t		 splay_ms;	/* --splay: a random pause first; 0: none */
	int		 overdue;	/* status --overdue */
	int		 failing;	/* status --failing */
	int64_t		 grace_ms;	/* schedule declare --grace; 0: none */
	int64_t		 for_ms;	/* schedule pause --for; 0: until resumed */
	int		 schedules;	/* schedule list: only names with one */
	const char	*cron;		/* exec, schedule declare: --cron EXPR */
	const char	*cron_tz;	/* --cron-tz ZONE; NULL: the machine's */

	char		**args;		/* positional arguments */
	int		 nargs;
	char		**child;	/* exec: the command's argv */
	int		 nchild;
};

/* exec --record: what is stored of the command, with the lock and in its history. */
enum record {
	RECORD_NAME,		/* its first word (the default) */
	RECORD_FULL,		/* its words, a URL's password masked */
	RECORD_NONE		/* nothing */
};

/*
 * Where a value comes from: a config file's line, or with line 0 the
 * environment variable named file; NULL: the command line.
 */
struct opt_where {
	const char	*file;
	int		 line;
};

/* How a value is stored in struct opts. */
enum opt_kind {
	OPT_KIND_NONE,		/* only noted in given: --help, --version */
	OPT_KIND_SET,		/* the int at field becomes set */
	OPT_KIND_STRING,	/* the const char * at field points at it */
	OPT_KIND_DURATION,	/* the int64_t at field, in ms, checked */
	OPT_KIND_PARSE		/* parse() checks and stores it */
};

/* One line of the option table. */
struct opt_def {
	enum opt_id	 id;
	int		 shortopt;
	const char	*longopt;	/* also its key in the config file */
	const char	*arg;		/* NULL: takes no value */
	const char	*help;
	int		 flags;
#define OPTF_ZERO_OK	0x1	/* a duration of 0 is allowed */
#define OPTF_ARGV_ONLY	0x2	/* not a config file key */
	enum opt_kind	 kind;
	size_t		 field;		/* offsetof(struct opts, ...) */
	int		 set;		/* OPT_KIND_SET */
	int64_t		 max_ms;	/* OPT_KIND_DURATION; 0: no limit */
	int		 (*parse)(struct opts *, const char *,
			     const struct opt_where *);
};

struct cmd_entry;

/*
 * Walk argv once: options, the command word (found with find_cmd, which
 * says why when it returns NULL), its arguments, and for exec the child's
 * argv, which is left untouched.  0, or the exit status to leave with.
 */
int	options_parse(struct opts *, int argc, char **argv,
	    const struct cmd_entry *(*find_cmd)(const char *),
	    const struct cmd_entry **);
/* Check and store one option's value; 0, or the exit status of a usage error. */
int	options_apply(struct opts *, const struct opt_def *, const char *,
	    const struct opt_where *);
/* The option called name (len bytes of it), or NULL. */
const struct opt_def *options_find(const char *name, size_t len);
/* The option table: its lines, *n of them. */
const struct opt_def *options_table(size_t *n);
/* The long name of the first option of mask, in the table's order. */
const char *options_first_name(uint64_t mask);
/* Append the URL or the URLs (separated by whitespace) of v. */
int	options_add_urls(struct opts *, const char *v, const struct opt_where *);
void	options_clear_urls(struct opts *);
/* Is p a key prefix rlock can use?  0, or the exit status of a usage error. */
int	options_check_prefix(const char *p, const struct opt_where *);
/* Is v, empty, the same as not giving d at all (see rlock.conf(5))? */
int	options_empty_is_unset(const struct opt_def *d, const char *v);

/* Help for ce, or with ce NULL for rlock itself and every command of table. */
void	options_help(FILE *, const struct cmd_entry *ce,
	    const struct cmd_entry *const *table);

/* A usage error, after "FILE:LINE: " when from a config file: returns 64. */
int	options_usage_error(const struct opt_where *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	options_usage_verror(const struct opt_where *, const char *, va_list)
	    __attribute__((format(printf, 2, 0)));
/* s for a one-line message: control bytes as \xNN, cut short with "...". */
const char *options_printable(const char *s, char *buf, size_t len);

/*
 * A command as the option parser and the help see it; the command table
 * itself is cmd.c's.
 */
struct cmd_ctx;

struct cmd_entry {
	const char	*name;
	const char	*args;		/* "NAME", "[NAME...]" */
	const char	*summary;
	uint64_t	 options;	/* besides OPTS_GLOBAL */
	int		 min_args;
	int		 max_args;	/* -1: no limit */
	/*
	 * After this many arguments, the next word that is not an option
	 * starts the child's argv (exec), which is then left untouched.
	 */
	int		 child_after;
	/* This command's wording of an option's help, where it differs. */
	const char	*opt_help[O__COUNT];
	int		 (*exec)(struct cmd_ctx *);
};

#endif
