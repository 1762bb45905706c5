/* fuzz-config.c: libFuzzer target for config_parse_line and config_bool. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conffile.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*why = NULL;
	char		*s, *key, *value;
	int		 rc;

	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	rc = config_parse_line(s, &key, &value, &why);
	if (rc == 1) {
		if (*key == '\0' || strchr(key, '=') != NULL)
			abort();
		config_bool(value);
	} else if (rc == -1 && why == NULL)
		abort();
	free(s);
	return 0;
}
