/* cmd.h: the command table, and what every command shares. */
#ifndef RLOCK_CMD_H
#define RLOCK_CMD_H

#include <signal.h>
#include <stdint.h>

#include "err.h"
#include "lock.h"
#include "options.h"
#include "quorum.h"
#include "redis.h"
#include "url.h"

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
