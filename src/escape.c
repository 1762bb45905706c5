/* escape.c: text from outside made safe to show on a terminal or in a log. */

/*
 * Everything rlock shows that it did not write itself -- a holder's host,
 * user and command read back from Redis, history entries, key names found
 * by SCAN, a server's error text, a URL's user name -- may hold bytes
 * that steer the terminal it is shown on (ESC sequences that clear,
 * recolour or retitle it, a carriage return that writes over a line, a
 * newline that forges one) or text that reads other than it is (bidi
 * overrides, zero-width characters).  The text forms (status, log, watch,
 * the waiting line) and every stderr and syslog line pass such text
 * through escape_add; JSON has its own escaping (json.c).
 *
 * The table of invisible code points is small and fixed (Unicode 15.1):
 * category Cf and the Default_Ignorable_Code_Point property, from
 * DerivedGeneralCategory.txt and DerivedCoreProperties.txt.  Unassigned
 * code points inside those ranges are refused too.
 */

#include <stdio.h>
#include <string.h>

#include "escape.h"

/* Invisible or direction-changing code points, as sorted ranges. */
static const struct {
	uint32_t	lo, hi;
} invisible[] = {
	{ 0x00ad, 0x00ad },	/* soft hyphen */
	{ 0x034f, 0x034f },	/* combining grapheme joiner */
	{ 0x0600, 0x0605 },	/* Arabic number signs */
	{ 0x061c, 0x061c },	/* Arabic letter mark (bidi) */
	{ 0x06dd, 0x06dd },
	{ 0x070f, 0x070f },
	{ 0x0890, 0x0891 },
	{ 0x08e2, 0x08e2 },
	{ 0x115f, 0x1160 },	/* Hangul fillers */
	{ 0x17b4, 0x17b5 },	/* Khmer inherent vowels */
	{ 0x180b, 0x180f },	/* Mongolian variation selectors, vowel separator */
	{ 0x200b, 0x200f },	/* zero-width space, joiners; LRM, RLM (bidi) */
	{ 0x202a, 0x202e },	/* bidi embeddings and overrides */
	{ 0x2060, 0x206f },	/* word joiner, invisible operators, bidi isolates */
	{ 0x3164, 0x3164 },	/* Hangul filler */
	{ 0xfe00, 0xfe0f },	/* variation selectors */
	{ 0xfeff, 0xfeff },	/* zero-width no-break space, BOM */
	{ 0xffa0, 0xffa0 },	/* halfwidth Hangul filler */
	{ 0xfff0, 0xfffb },	/* interlinear annotation */
	{ 0x110bd, 0x110bd },
	{ 0x110cd, 0x110cd },
	{ 0x13430, 0x1343f },	/* Egyptian hieroglyph format controls */
	{ 0x1bca0, 0x1bca3 },	/* shorthand format controls */
	{ 0x1d173, 0x1d17a },	/* musical symbol format controls */
	{ 0xe0000, 0xe0fff },	/* tags, variation selectors supplement */
};

static int
is_bidi_control(uint32_t cp)
{
	return cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	    (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

const char *
escape_invisible(uint32_t cp)
{
	size_t	lo = 0, hi = sizeof invisible / sizeof invisible[0], mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (cp < invisible[mid].lo)
			hi = mid;
		else if (cp > invisible[mid].hi)
			lo = mid + 1;
		else
			return is_bidi_control(cp) ?
			    "a bidirectional text control" :
			    "an invisible format character";
	}
	return NULL;
}

/* Code points shown by number: C1 controls, separators, the invisible. */
static int
shown_by_number(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
	    escape_invisible(cp) != NULL;
}

void
escape_add(struct buf *b, const char *s, size_t len)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i, start, n;
	uint32_t		 cp;

	for (i = start = 0; i < len; i += n) {
		n = 1;
		if (u[i] >= 0x20 && u[i] < 0x7f)
			continue;
		if (u[i] >= 0x80 && (n = utf8_decode(u + i, len - i, &cp)) > 0 &&
		    !shown_by_number(cp))
			continue;
		/* Flush the plain run before this one, then show it. */
		buf_add(b, s + start, i - start);
		if (u[i] < 0x80 || n == 0) {
			buf_printf(b, "\\x%02x", u[i]);
			n = 1;
		} else if (cp <= 0xffff)
			buf_printf(b, "\\u%04X", (unsigned)cp);
		else
			buf_printf(b, "\\U%08X", (unsigned)cp);
		start = i + n;
	}
	buf_add(b, s + start, len - start);
}

void
escape_adds(struct buf *b, const char *s)
{
	if (s != NULL)
		escape_add(b, s, strlen(s));
}

char *
escape_dup(const char *s)
{
	struct buf	b;

	buf_init(&b);
	escape_adds(&b, s);
	return b.p;
}
