/* cmd.h: the command table, and what every command shares. */
#ifndef RLOCK_CMD_H
#define RLOCK_CMD_H

#include <signal.h>
#include <stdint.h>

#include "err.h"
#include "lock.h"
#include "options.h"
#include "output.h"
#include "quorum.h"
#include "settings.h"
#include "url.h"

/* What a command runs with: its options, and the servers once connected. */
struct cmd_ctx {
	const struct cmd_entry	*entry;
	struct opts		 o;
	struct settings		 set;	/* the servers, and how to reach them */
	struct quorum		 q;
	int			 connected;
	struct err		 err;
};

extern const struct cmd_entry	cmd_acquire_entry;
extern const struct cmd_entry	cmd_release_entry;
extern const struct cmd_entry	cmd_extend_entry;
extern const struct cmd_entry	cmd_status_entry;
extern const struct cmd_entry	cmd_exec_entry;
extern const struct cmd_entry	cmd_doctor_entry;
extern const struct cmd_entry	cmd_log_entry;
extern const struct cmd_entry	cmd_watch_entry;
extern const struct cmd_entry	cmd_schedule_entry;

/* Parse argv, run the command, return the exit status. */
int	cmd_main(int argc, char **argv);

/* Connect to the servers (once).  0, or -1 with ctx->err filled. */
int	cmd_connect(struct cmd_ctx *);
/* Print ctx->err as one line and return its exit status. */
int	cmd_fail(struct cmd_ctx *);
/* A usage error: print it and return 64. */
#define cmd_usage_error(...)	options_usage_error(NULL, __VA_ARGS__)
/* Check a NAME argument; 0, or -1 with a message printed. */
int	cmd_check_name(const char *);
/* The token for release/extend: --token, else $RLOCK_TOKEN; NULL if none. */
const char *cmd_token(struct cmd_ctx *);
/*
 * A lock named NAME on ctx's servers, with ctx's --wait-replicas, and a
 * live waiting line when stderr is a terminal.
 */
void	cmd_lock_init(struct cmd_ctx *, struct lock *, const char *token);
/*
 * What output.c prints about st (status, release --force).  v borrows
 * st's strings; free v->servers, v->waiters and v->slots when done.
 */
void	cmd_status_view(const struct lock_status *st, struct output_status *v);
int	cmd_overdue(const struct lock_status *st);
int	cmd_failing(const struct lock_status *st);
int	cmd_paused(const struct lock_status *st);
long long cmd_grace(const struct lock_status *st);
long long cmd_next_due(const struct lock_status *st);
/* --splay: a random pause before the first attempt; 0, or -1 (a signal). */
int	cmd_splay(struct cmd_ctx *);
/* Fill meta with this host, user and the given pid and command. */
void	cmd_meta(struct lock_meta *, long long pid, const char *command);
/* Best-effort release on a failure path, even after a signal. */
void	cmd_give_back(struct lock *);
/* lock_acquire with -w's end as every request's (see redis_opts.end_ms). */
int	cmd_lock_acquire(struct cmd_ctx *, struct lock *,
	    const struct lock_meta *);

#endif
