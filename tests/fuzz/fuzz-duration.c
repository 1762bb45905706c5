/* fuzz-duration.c: libFuzzer target for duration_parse and duration_format. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		 why[64] = "";
	char		*s, buf[64];
	int64_t		 ms;

	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (duration_parse(s, &ms, why, sizeof why) == 0) {
		/* What parses is never negative and prints back. */
		if (ms < 0)
			abort();
		duration_format(ms, buf, sizeof buf);
	} else if (why[0] == '\0')
		abort();
	free(s);
	return 0;
}
