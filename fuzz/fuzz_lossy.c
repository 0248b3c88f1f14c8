/* fuzz_lossy.c — libFuzzer target: any NUL-terminated bytes become a valid
 * JSON string (foreign stderr lines end up in probe answers this way). */
#include "json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	json_t *v = sbx_json_string_lossy(s);
	if (!json_is_string(v))
		abort();
	json_decref(v);
	free(s);
	return 0;
}
