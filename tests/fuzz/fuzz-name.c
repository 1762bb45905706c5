/* fuzz-name.c: libFuzzer target for name_check, escape_add and the JSON writer's strings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "json.h"
#include "util.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf	 b;
	struct json	 j;
	char		*s, why[256];
	size_t		 i, n;
	uint32_t	 cp;
	int		 ok;

	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if ((ok = name_check(s, why, sizeof why) == 0)) {
		/* An accepted name has no brace, space or control byte. */
		for (i = 0; s[i] != '\0'; i++)
			if (s[i] == '{' || s[i] == '}' ||
			    (unsigned char)s[i] <= ' ' || s[i] == 0x7f)
				abort();
	}
	/*
	 * Escaped text is valid UTF-8 with no control byte, no C1 control
	 * and nothing invisible; an accepted name is shown as it is.
	 */
	buf_init(&b);
	escape_add(&b, (const char *)data, size);
	for (i = 0; i < b.len; i += n) {
		if ((n = utf8_decode((const unsigned char *)b.p + i, b.len - i,
		    &cp)) == 0 || cp < ' ' || cp == 0x7f ||
		    (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
		    escape_invisible(cp) != NULL)
			abort();
	}
	buf_free(&b);
	if (ok) {
		buf_init(&b);
		escape_adds(&b, s);
		if (strcmp(b.p, s) != 0)
			abort();
		buf_free(&b);
	}
	buf_init(&b);
	json_open(&j, &b, 0);
	json_strn(&j, (const char *)data, size);
	/* JSON output never holds a raw control byte. */
	for (i = 0; i < b.len; i++)
		if ((unsigned char)b.p[i] < ' ')
			abort();
	buf_free(&b);
	free(s);
	return 0;
}
