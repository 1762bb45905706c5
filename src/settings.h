/* settings.h: where each setting comes from, and which one wins. */
#ifndef RLOCK_SETTINGS_H
#define RLOCK_SETTINGS_H

struct cmd_ctx;
struct opts;

/* The defaults that a config file or a flag may replace. */
void	settings_defaults(struct opts *);
/*
 * Read the config file (--config, else $RLOCK_CONFIG, else
 * /etc/rlock.conf if it exists) into ctx, skipping the settings the
 * command line gave.  0, or the exit status of a usage error.
 */
int	settings_read_config(struct cmd_ctx *);
/*
 * Weigh the environment against the file and the defaults, then fill
 * ctx's URLs, password and redis_opts.  0, or the exit status of a usage
 * error.
 */
int	settings_settle(struct cmd_ctx *);

#endif
