/* fuzz-config.c: libFuzzer target for config_parse_line and config_bool. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conffile.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		 why[160] = "";
	char		*s, *key, *value;
	int		 rc;

	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	rc = config_parse_line(s, &key, &value, why, sizeof why);
	if (rc == 1) {
		if (*key == '\0' || strchr(key, '=') != NULL)
			abort();
		config_bool(value);
	} else if (rc == -1 && why[0] == '\0')
		abort();
	free(s);
	return 0;
}
