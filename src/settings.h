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
 * The settled connection and history settings of o as a config file's
 * text, for an rlock run on our behalf (exec's guard); the password is
 * not in it, but a URL's is.  NULL if a value cannot be written so.
 */
char	*settings_config_text(const struct opts *);

#endif
