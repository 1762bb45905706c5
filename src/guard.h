/* guard.h: a process that holds the command's process group for rlock. */
#ifndef RLOCK_GUARD_H
#define RLOCK_GUARD_H

#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "procs.h"

struct guard_shared;

/*
 * How the guard gives the lock back when rlock has died: rlock's own
 * binary, exec'ed as `rlock --config /dev/fd/4 ... release --token T
 * NAME`, everything made before the guard is forked (after, it may only
 * make async-signal-safe calls).  The settings go through pipes, never
 * argv or the environment, which the command could read.
 */
struct guard_release {
	int		  exe;		/* /proc/self/exe, O_PATH; -1: none */
	int		  config;	/* read end of the settings' pipe */
	int		  password;	/* read end of the password's; -1 */
	int		  sentinel_password;	/* the sentinels' own; -1 */
	char		**argv;
	char		**envp;
};
#define GUARD_FD_EXE		3
#define GUARD_FD_CONFIG		4
#define GUARD_FD_PASSWORD	5
#define GUARD_FD_SENTINEL_PASSWORD	6

struct guard {
	pid_t			 pid;	/* the guard, and the group's id */
	int			 fd;	/* closing it without guard_done kills */
	struct guard_shared	*sh;	/* what rlock tells it, in shared memory */
};

/*
 * Fork the guard into the command's process group pg.  It kills the whole
 * group with SIGKILL when rlock dies, whatever kills rlock, and then,
 * once none of it is left, gives the lock back as rel says (if not
 * NULL); and if rlock
 * stops acting (stopped, wedged) it acts in its place when the lock's
 * validity (valid_until, then what guard_valid says) runs out: on_lost to
 * the group (SIGKILL at once if the command is suspended), then SIGKILL
 * kill_after_ms later.  margin_ms is how long after the validity it waits
 * for rlock to act first.  0, or -1 with e filled.
 */
int	guard_start(struct guard *, pid_t pg, int64_t valid_until,
	    int64_t margin_ms, int on_lost, int64_t kill_after_ms,
	    const struct guard_release *rel, struct err *e);
/*
 * Ready rel: config is the settings as a config file's text, password
 * the password or NULL (given to release on its command line if
 * password_argv, as exec's --password-file was, else in the file),
 * sentinel_password the sentinels' own or NULL (in the file), extra
 * options before the command word (NULL-terminated), the lock's name and
 * token.  0, or -1 (rel left empty: the lock then expires by itself).
 */
int	guard_release_init(struct guard_release *rel, const char *config,
	    const char *password, int password_argv,
	    const char *sentinel_password, const char *const *extra,
	    const char *name, const char *token);
void	guard_release_free(struct guard_release *rel);
/*
 * The command's processes outside its group pg (0: all of ps): the
 * guard kills them too if rlock dies.
 */
void	guard_escaped(struct guard *, const struct procs *ps, pid_t pg);
/* The lock was confirmed until valid_until (any thread). */
void	guard_valid(struct guard *, int64_t valid_until);
/* The command is (1) or is no longer (0) suspended with rlock. */
void	guard_suspended(struct guard *, int on);
/* rlock sent the loss signal itself; SIGKILL is due at kill_at. */
void	guard_killing(struct guard *, int64_t kill_at);
/* The signal the guard sent the group in rlock's place, or 0. */
int	guard_acted(struct guard *);
/* The command is over: the guard goes without killing anything. */
void	guard_done(struct guard *);
/* Reap the guard (after guard_done, or after the group was killed). */
void	guard_reap(struct guard *);

#endif
