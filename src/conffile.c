/* conffile.c: parse the lines of rlock's configuration file. */

/*
 * The file names long options, one per line, as "key = value"; what a key
 * means, and which keys there are, is options.c's business.  This file only
 * splits lines, so that it can be tested on its own.
 */

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "conffile.h"

static char *
trim(char *s)
{
	char	*end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

int
config_parse_line(char *line, char **key, char **value, char *why,
    size_t whylen)
{
	char	*eq, *k, *p;

	line = trim(line);
	if (*line == '\0' || *line == '#')
		return 0;
	if ((eq = strchr(line, '=')) == NULL) {
		snprintf(why, whylen, "expected 'key = value'");
		return -1;
	}
	*eq = '\0';
	k = trim(line);
	if (strncmp(k, "--", 2) == 0)
		k += 2;
	if (*k == '\0') {
		snprintf(why, whylen, "the key is missing before '='");
		return -1;
	}
	for (p = k; *p != '\0'; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) &&
		    *p != '-') {
			snprintf(why, whylen, "a key is a long option name "
			    "such as 'url' or 'tls-ca'");
			return -1;
		}
	*key = k;
	*value = trim(eq + 1);
	return 1;
}

int
config_bool(const char *v)
{
	if (strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0 ||
	    strcasecmp(v, "on") == 0 || strcmp(v, "1") == 0)
		return 1;
	if (strcasecmp(v, "no") == 0 || strcasecmp(v, "false") == 0 ||
	    strcasecmp(v, "off") == 0 || strcmp(v, "0") == 0)
		return 0;
	return -1;
}
