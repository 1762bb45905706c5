/* fuzz-name.c: libFuzzer target for name_check and the JSON writer's strings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "util.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf	 b;
	struct json	 j;
	char		*s, why[256];
	size_t		 i;

	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (name_check(s, why, sizeof why) == 0) {
		/* An accepted name has no brace, space or control byte. */
		for (i = 0; s[i] != '\0'; i++)
			if (s[i] == '{' || s[i] == '}' ||
			    (unsigned char)s[i] <= ' ' || s[i] == 0x7f)
				abort();
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
