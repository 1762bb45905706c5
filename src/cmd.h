/* cmd.h: options, the command table, and what every command shares. */
#ifndef RLOCK_CMD_H
#define RLOCK_CMD_H

#include <signal.h>
#include <stdint.h>

#include "err.h"
#include "lock.h"
#include "quorum.h"
#include "redis.h"
#include "url.h"

#define MAX_URLS	16

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
	O__COUNT
};
#define OPT(x)		(1ULL << O_##x)
#define OPTS_GLOBAL	(OPT(URL) | OPT(PASSWORD_FILE) | OPT(PREFIX) | \
			 OPT(CONNECT_TIMEOUT) | OPT(TIMEOUT) | OPT(JSON) | \
			 OPT(QUIET) | OPT(VERBOSE) | OPT(HELP) | \
			 OPT(TLS_CA) | OPT(TLS_CERT) | OPT(TLS_KEY) | \
			 OPT(TLS_SERVER_NAME) | OPT(TLS_INSECURE) | OPT(CONFIG) | \
			 OPT(SYSLOG))

struct opts {
	uint64_t	 given;		/* OPT() bits seen on the command line */
	uint64_t	 from_file;	/* OPT() bits set by the config file */
	char		*url[MAX_URLS];	/* owned copies */
	int		 nurl;
	const char	*password_file;
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

	char		**args;		/* positional arguments */
	int		 nargs;
	char		**child;	/* exec: the command's argv */
	int		 nchild;
};

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

/* What a command runs with: its options, and the servers once connected. */
struct cmd_ctx {
	const struct cmd_entry	*entry;
	struct opts		 o;
	struct url		 urls[MAX_URLS];
	int			 nurls;
	struct redis_opts	 ropts;
	char			*password;
	struct quorum		 q;
	int			 connected;
	char			*config_text;	/* the file values point into */
	struct err		 err;
};

extern const struct cmd_entry	cmd_acquire_entry;
extern const struct cmd_entry	cmd_release_entry;
extern const struct cmd_entry	cmd_extend_entry;
extern const struct cmd_entry	cmd_status_entry;
extern const struct cmd_entry	cmd_exec_entry;
extern const struct cmd_entry	cmd_doctor_entry;

/* Parse argv, run the command, return the exit status. */
int	cmd_main(int argc, char **argv);

/* Connect to the servers (once).  0, or -1 with ctx->err filled. */
int	cmd_connect(struct cmd_ctx *);
/* Print ctx->err as one line and return its exit status. */
int	cmd_fail(struct cmd_ctx *);
/* A usage error: print it and return 64. */
int	cmd_usage_error(const char *, ...) __attribute__((format(printf, 1, 2)));
/* s for a one-line message: control bytes as \xNN, cut short with "...". */
const char *cmd_printable(const char *s, char *buf, size_t len);
/* Check a NAME argument; 0, or -1 with a message printed. */
int	cmd_check_name(const char *);
/* The token for release/extend: --token, else $RLOCK_TOKEN; NULL if none. */
const char *cmd_token(struct cmd_ctx *);
/*
 * A lock named NAME on ctx's servers, with ctx's --wait-replicas, and a
 * live waiting line when stderr is a terminal.
 */
void	cmd_lock_init(struct cmd_ctx *, struct lock *, const char *token);
/* Fill meta with this host, user and the given pid and command. */
void	cmd_meta(struct lock_meta *, long long pid, const char *command);
/* Best-effort release on a failure path, even after a signal. */
void	cmd_give_back(struct lock *);

#endif
