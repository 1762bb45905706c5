/* json.c: one small JSON writer over a struct buf: commas and escaping are its job. */

/*
 * Every JSON rlock prints is written here: the status and acquire objects
 * on stdout, doctor's findings, and the -v --json event lines on stderr.
 * The writer only appends, and the caller decides when the buffer goes
 * out.  It tracks just enough to place the commas: how deep it is, whether
 * the container at each depth already holds a value, and whether a key is
 * waiting for its value.  Whatever bytes a string holds, the output is
 * valid JSON: invalid UTF-8 becomes U+FFFD, control bytes are escaped.
 * Nesting past JSON_DEPTH_MAX or closing what is not open is a bug in the
 * caller, and aborts.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

void
json_open(struct json *j, struct buf *b, int flags)
{
	memset(j, 0, sizeof *j);
	j->b = b;
	j->flags = flags;
}

/*
 * Before any value: the comma that separates it from the one before, at
 * this depth (none after a key, none between top-level values).
 */
static void
separate(struct json *j)
{
	if (j->keyed) {
		j->keyed = 0;
		return;
	}
	if (j->depth > 0 && j->filled[j->depth]) {
		buf_add(j->b, ",", 1);
		if ((j->flags & JSON_LINES) && j->depth == 1)
			buf_add(j->b, "\n", 1);
	}
	j->filled[j->depth] = 1;
}

static void
open_container(struct json *j, char c)
{
	separate(j);
	if (j->depth == JSON_DEPTH_MAX)
		abort();
	buf_add(j->b, &c, 1);
	j->filled[++j->depth] = 0;
}

static void
close_container(struct json *j, char c)
{
	if (j->depth == 0 || j->keyed)
		abort();
	buf_add(j->b, &c, 1);
	j->depth--;
}

void
json_object_begin(struct json *j)
{
	open_container(j, '{');
}

void
json_object_end(struct json *j)
{
	close_container(j, '}');
}

void
json_array_begin(struct json *j)
{
	open_container(j, '[');
}

void
json_array_end(struct json *j)
{
	close_container(j, ']');
}

/* Append s (len bytes) as a string literal, quotes included. */
static void
quote(struct buf *b, const char *s, size_t len)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i, n;
	uint32_t		 cp;

	buf_add(b, "\"", 1);
	for (i = 0; i < len; i += n) {
		n = 1;
		switch (u[i]) {
		case '"':
			buf_add(b, "\\\"", 2);
			continue;
		case '\\':
			buf_add(b, "\\\\", 2);
			continue;
		case '\n':
			buf_add(b, "\\n", 2);
			continue;
		case '\r':
			buf_add(b, "\\r", 2);
			continue;
		case '\t':
			buf_add(b, "\\t", 2);
			continue;
		case '\b':
			buf_add(b, "\\b", 2);
			continue;
		case '\f':
			buf_add(b, "\\f", 2);
			continue;
		}
		if (u[i] < 0x20 || u[i] == 0x7f) {
			buf_printf(b, "\\u%04x", u[i]);
			continue;
		}
		if ((n = utf8_decode(u + i, len - i, &cp)) == 0) {
			/*
			 * One replacement per bad byte, so the output shows
			 * how much was lost and resynchronises at once.
			 */
			buf_add(b, "\xef\xbf\xbd", 3);
			n = 1;
			continue;
		}
		buf_add(b, u + i, n);
	}
	buf_add(b, "\"", 1);
}

void
json_key(struct json *j, const char *key)
{
	if (j->keyed)
		abort();
	separate(j);
	quote(j->b, key, strlen(key));
	buf_add(j->b, ":", 1);
	j->keyed = 1;
}

void
json_strn(struct json *j, const char *s, size_t len)
{
	separate(j);
	quote(j->b, s, len);
}

void
json_str(struct json *j, const char *s)
{
	if (s == NULL)
		json_null(j);
	else
		json_strn(j, s, strlen(s));
}

void
json_int(struct json *j, long long v)
{
	separate(j);
	buf_printf(j->b, "%lld", v);
}

void
json_bool(struct json *j, int v)
{
	separate(j);
	buf_adds(j->b, v ? "true" : "false");
}

void
json_null(struct json *j)
{
	separate(j);
	buf_adds(j->b, "null");
}
