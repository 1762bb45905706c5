/* duration.c: parse and print the durations rlock's options take. */

/*
 * duration_parse turns "250ms", "1.5s", "30" or "2m" into milliseconds,
 * rounded to the nearest one, and rejects everything else with a short
 * static reason.  It reads the digits itself rather than calling strtod so
 * that hex, exponents, "inf" and "nan" never sneak in, and so that "0.1s"
 * is exactly 100 and not 99.99999.  duration_format prints a value back for
 * a person, at most two units wide.
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"

/* A hundred Julian years: longer than any lock has a reason to live. */
#define DURATION_MAX_MS		INT64_C(3155760000000)

/*
 * Fraction digits past this many only decide whether a value is zero: the
 * scaled fraction must fit an int64_t (10^10 * 86400000, a day, < 2^63;
 * ten digits of a day are still finer than a tenth of a millisecond).
 */
#define FRAC_DIGITS		10

struct unit {
	const char	*name;
	int64_t		 ms;
};

static const struct unit units[] = {
	{ "ms", 1 },
	{ "s", 1000 },
	{ "m", 60 * 1000 },
	{ "h", 60 * 60 * 1000 },
	{ "d", 24 * 60 * 60 * 1000 },
};

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int
is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static const struct unit *
find_unit(const char *name)
{
	size_t	i;

	/* A bare number is seconds, as flock -w. */
	if (*name == '\0')
		return &units[1];
	for (i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(name, units[i].name) == 0)
			return &units[i];
	}
	return NULL;
}

/* A duration's text, cut into its number and its unit. */
struct parts {
	const char		*int_start, *int_end;
	const char		*frac_start, *frac_end;
	const struct unit	*unit;
};

/* Check the shape: digits, an optional fraction, a known unit.  0 or -1. */
static int
split(const char *s, struct parts *pt, char *why, size_t whylen)
{
	const char	*p = s, *q;
	int		 negative = 0;

	if (s == NULL || *s == '\0') {
		snprintf(why, whylen, "empty");
		return -1;
	}
	if (*p == '-') {
		negative = 1;
		p++;
	}
	pt->int_start = p;
	while (is_digit(*p))
		p++;
	pt->int_end = p;
	pt->frac_start = pt->frac_end = p;
	if (*p == '.') {
		pt->frac_start = ++p;
		while (is_digit(*p))
			p++;
		pt->frac_end = p;
		/* "5." is more likely a typo than a deliberate five. */
		if (pt->frac_end == pt->frac_start) {
			snprintf(why, whylen, "not a number");
			return -1;
		}
	}
	if (pt->int_end == pt->int_start && pt->frac_end == pt->frac_start) {
		snprintf(why, whylen, "not a number");
		return -1;
	}
	/*
	 * Only letters can be a unit; anything else left over ("1e3",
	 * "0x10", "1.5.2", "1 s") is a malformed number.
	 */
	for (q = p; *q != '\0'; q++) {
		if (!is_letter(*q)) {
			snprintf(why, whylen, "not a number");
			return -1;
		}
	}
	if ((pt->unit = find_unit(p)) == NULL) {
		snprintf(why, whylen, "unknown unit '%.16s'", p);
		return -1;
	}
	if (negative) {
		snprintf(why, whylen, "negative");
		return -1;
	}
	return 0;
}

/* The milliseconds the parts say, exactly, or -1 when out of range. */
static int
value(const struct parts *pt, int64_t *ms, char *why, size_t whylen)
{
	const char	*q;
	int64_t		 whole = 0, frac = 0, scale = 1, total, rem;
	int		 nonzero = 0, ndigits = 0;

	/* Whole part, stopping as soon as it is certainly too large. */
	for (q = pt->int_start; q < pt->int_end; q++) {
		whole = whole * 10 + (*q - '0');
		if (whole != 0)
			nonzero = 1;
		if (whole > DURATION_MAX_MS / pt->unit->ms) {
			snprintf(why, whylen, "too large");
			return -1;
		}
	}
	total = whole * pt->unit->ms;

	/* Fraction as frac / scale, with scale a power of ten. */
	for (q = pt->frac_start; q < pt->frac_end; q++) {
		if (*q != '0')
			nonzero = 1;
		if (ndigits < FRAC_DIGITS) {
			frac = frac * 10 + (*q - '0');
			scale *= 10;
			ndigits++;
		}
	}
	frac *= pt->unit->ms;
	rem = frac % scale;
	total += frac / scale;
	if (rem * 2 >= scale)		/* Halves round up. */
		total++;

	if (total > DURATION_MAX_MS) {
		snprintf(why, whylen, "too large");
		return -1;
	}
	if (total == 0 && nonzero) {
		snprintf(why, whylen, "shorter than 1ms");
		return -1;
	}
	*ms = total;
	return 0;
}

int
duration_parse(const char *s, int64_t *ms, char *why, size_t whylen)
{
	struct parts	 pt;
	char		 dummy[64];

	if (why == NULL) {
		why = dummy;
		whylen = sizeof dummy;
	}
	if (split(s, &pt, why, whylen) == -1)
		return -1;
	return value(&pt, ms, why, whylen);
}

char *
duration_format(int64_t ms, char *buf, size_t len)
{
	const int64_t	sec = 1000, min = 60 * sec, hour = 60 * min;
	const int64_t	day = 24 * hour;
	int64_t		hi, lo;

	if (len == 0)
		return buf;
	if (ms < 0)
		ms = 0;

	/*
	 * Each form truncates rather than rounds, so a value never prints as
	 * the next unit up ("59.99s" stays "59.9s", not "60.0s").
	 */
	if (ms < sec)
		snprintf(buf, len, "%lldms", (long long)ms);
	else if (ms < min) {
		hi = ms / sec;
		lo = ms % sec / 100;
		if (lo == 0)
			snprintf(buf, len, "%llds", (long long)hi);
		else
			snprintf(buf, len, "%lld.%llds", (long long)hi,
			    (long long)lo);
	} else if (ms < hour) {
		hi = ms / min;
		lo = ms % min / sec;
		if (lo == 0)
			snprintf(buf, len, "%lldm", (long long)hi);
		else
			snprintf(buf, len, "%lldm%llds", (long long)hi,
			    (long long)lo);
	} else if (ms < day) {
		hi = ms / hour;
		lo = ms % hour / min;
		if (lo == 0)
			snprintf(buf, len, "%lldh", (long long)hi);
		else
			snprintf(buf, len, "%lldh%lldm", (long long)hi,
			    (long long)lo);
	} else {
		hi = ms / day;
		lo = ms % day / hour;
		if (lo == 0)
			snprintf(buf, len, "%lldd", (long long)hi);
		else
			snprintf(buf, len, "%lldd%lldh", (long long)hi,
			    (long long)lo);
	}
	return buf;
}
