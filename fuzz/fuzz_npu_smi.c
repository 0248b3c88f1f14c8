/* fuzz_npu_smi.c — libFuzzer target: the npu-smi table parser on arbitrary
 * text (the first NUL splits `info` from `info -m`): no crash, no overread,
 * and every device has a cardId, a chipId and a hostIndex. */
#include "../src/sbx-npu/smi.c" /* sbx-npu's own parser */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 2);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = text[size + 1] = '\0';
	const char *mapping = text + strlen(text) + 1 <= text + size ? text + strlen(text) + 1 : NULL;
	json_t *devices = sbx_npu_smi_parse(text, mapping);
	size_t i;
	json_t *d;
	json_array_foreach(devices, i, d)
		if (!json_is_integer(json_object_get(d, "cardId")) || !json_is_integer(json_object_get(d, "chipId")) ||
		    !json_is_integer(json_object_get(d, "hostIndex")))
			abort();
	json_decref(devices);
	free(text);
	return 0;
}
