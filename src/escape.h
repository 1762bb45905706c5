/* escape.h: text from outside made safe to show on a terminal or in a log. */
#ifndef RLOCK_ESCAPE_H
#define RLOCK_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/*
 * Append s (len bytes) to b as it may be shown: valid, printable UTF-8 as
 * it is; each C0 control (newline, carriage return, escape, tab...), DEL
 * and each byte that is not part of well-formed UTF-8 as \xHH; C1 controls,
 * the line and paragraph separators and the invisible code points
 * (escape_invisible) as \uHHHH (\UHHHHHHHH past U+FFFF).  A backslash is
 * left as it is: the form is for reading, not for reversing.
 */
void		 escape_add(struct buf *b, const char *s, size_t len);
/* The same for a NUL-terminated string; NULL appends nothing. */
void		 escape_adds(struct buf *b, const char *s);
/* A newly allocated escaped copy of s (NULL: ""). */
char		*escape_dup(const char *s);

/*
 * Whether cp is invisible or steers the direction of text: every format
 * character (Unicode category Cf, the bidirectional controls among them)
 * and the other default-ignorable code points (variation selectors, the
 * Hangul fillers, U+034F, tags...).  Returns a few words naming its kind
 * ("a bidirectional text control", "an invisible format character"), or
 * NULL when cp is none of those.
 */
const char	*escape_invisible(uint32_t cp);

#endif
