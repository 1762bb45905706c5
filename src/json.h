/* json.h: one small JSON writer over a struct buf: commas and escaping are its job. */
#ifndef RLOCK_JSON_H
#define RLOCK_JSON_H

#include <stddef.h>

#include "util.h"

/* Deeper than rlock ever writes (a status, its servers, one server). */
#define JSON_DEPTH_MAX	8

/* json_open flags. */
#define JSON_LINES	0x1	/* a newline after each comma of the outermost array */

/*
 * A writer appends to b as values are given to it; nothing is buffered
 * apart from where it is, so b can be written out at any point between
 * two top-level values.  Inside an object each value follows a json_key.
 */
struct json {
	struct buf	*b;
	int		 flags;
	int		 depth;		/* objects and arrays open */
	int		 keyed;		/* a key was written; its value is next */
	unsigned char	 filled[JSON_DEPTH_MAX + 1]; /* depth d holds a value */
};

void	json_open(struct json *, struct buf *, int flags);
void	json_object_begin(struct json *);
void	json_object_end(struct json *);
void	json_array_begin(struct json *);
void	json_array_end(struct json *);
/* An object's key; its value is whatever is written next. */
void	json_key(struct json *, const char *);
/*
 * A string (json_str: NUL-terminated, and NULL is null): '"' and '\\'
 * escaped, \n \r \t \b \f short forms, other bytes below 0x20 and 0x7f as
 * \u00XX, valid UTF-8 passed through, and each byte of an invalid UTF-8
 * sequence replaced by U+FFFD, so the output is valid JSON whatever the
 * bytes.
 */
void	json_str(struct json *, const char *);
void	json_strn(struct json *, const char *, size_t);
void	json_int(struct json *, long long);
void	json_bool(struct json *, int);
void	json_null(struct json *);

#endif
