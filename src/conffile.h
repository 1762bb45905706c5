/* conffile.h: the key = value lines of /etc/rlock.conf. */
#ifndef RLOCK_CONFFILE_H
#define RLOCK_CONFFILE_H

#include <stddef.h>

/*
 * Parse one line in place.  Returns 0 for a blank line or a comment (a
 * line whose first non-blank character is '#'), 1 with *key and *value
 * pointing into line (both trimmed; a leading "--" on the key dropped),
 * or -1 with the reason in why (whylen bytes).  A '#' later in a line is part of the value:
 * passwords and URLs may hold one.
 */
int	config_parse_line(char *line, char **key, char **value,
	    char *why, size_t whylen);

/*
 * A yes/no value: "yes", "true", "on", "1" give 1; "no", "false", "off",
 * "0" give 0; anything else -1.
 */
int	config_bool(const char *value);

#endif
