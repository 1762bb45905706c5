/* fuzz-url.c: libFuzzer target for url_parse: no crash, no password shown. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "url.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct url	 u;
	char		*s, *shown, *pw, why[256];

	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (url_parse(s, &u, why, sizeof why) == 0) {
		/*
		 * The display form must not depend on the password: with the
		 * password swapped for another, it is built the same.
		 */
		shown = strdup(u.display);
		pw = u.password;
		u.password = "\x01secret\x01";
		url_build_display(&u);
		if (shown == NULL || strcmp(shown, u.display) != 0 ||
		    strstr(u.display, "\x01secret\x01") != NULL)
			abort();
		u.password = pw;
		free(shown);
		url_free(&u);
	}
	free(s);
	return 0;
}
