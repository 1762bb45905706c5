/* settings.h: where each setting comes from, and which one wins. */
#ifndef RLOCK_SETTINGS_H
#define RLOCK_SETTINGS_H

#include "netopts.h"
#include "options.h"
#include "url.h"

/* Where the servers are and how to reach them, once settled. */
struct settings {
	struct url		 urls[MAX_URLS];
	int			 nurls;
	struct redis_opts	 ropts;
	char			*password;
	char			*sentinel_password;	/* the sentinels' own */
	char			*config_text;	/* the file values point into */
};

/* The defaults that a config file or a flag may replace. */
void	settings_defaults(struct opts *);
/*
 * Read the config file (--config, else $RLOCK_CONFIG, else
 * /etc/rlock.conf if it exists) into o, skipping the settings the
 * command line gave.  0, or the exit status of a usage error.
 */
int	settings_read_config(struct settings *, struct opts *);
/*
 * Weigh the environment against the file and the defaults, then fill
 * s: the URLs, the password and redis_opts.  0, or the exit status of a
 * usage error.
 */
int	settings_settle(struct settings *, struct opts *);
/*
 * The option longopt from the environment variable name, unless its flag
 * was given or the variable is empty (unset): checked and stored by the
 * option's own parser, as a flag or a config line is, and a bad value is
 * a usage error that names the variable.  0, or that exit status.
 */
int	settings_apply_env(struct opts *, const char *longopt,
	    const char *name);

#endif
