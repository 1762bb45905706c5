/* duration.h: parse and print the durations rlock's options take. */
#ifndef RLOCK_DURATION_H
#define RLOCK_DURATION_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parse a decimal number with an optional unit "ms", "s", "m" or "h"
 * ("250ms", "1.5s", "30", "2m").  A bare number is seconds, as flock -w.
 * Stores the value in milliseconds, rounded to the nearest millisecond.
 * Zero is accepted here ("0", "0s"); callers that need a positive value
 * check for it.  Returns 0, or -1 with a reason in why (whylen bytes:
 * "empty", "not a number", "unknown unit 'x'", "negative", "too large",
 * "shorter than 1ms") for anything else; why may be NULL.
 */
int	duration_parse(const char *s, int64_t *ms, char *why, size_t whylen);

/*
 * Print ms for a person: "0ms", "250ms", "1.5s", "59.9s", "2m30s", "1h2m",
 * "3d4h".  Returns buf.
 */
char   *duration_format(int64_t ms, char *buf, size_t len);

#endif
