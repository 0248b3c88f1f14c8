/* fuzz_json.c — libFuzzer target: the strict JSON parser and the schema
 * validator on arbitrary bytes must never crash, leak or read out of bounds. */
#include "json.h"

#include <stddef.h>
#include <stdint.h>

static const struct sbx_json_field fields[] = {
	{ "argv", SBX_JSON_ARRAY, true, false },
	{ "cwd", SBX_JSON_STRING, false, true },
	{ "env", SBX_JSON_OBJECT, false, false },
	{ "timeoutMs", SBX_JSON_INTEGER, false, false },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_error e;
	json_t *v = sbx_json_parse((const char *)data, size, "fuzz", &e);

	if (v) {
		sbx_json_validate(v, fields, sizeof(fields) / sizeof(fields[0]), "spec", &e);
		json_decref(v);
	}
	return 0;
}
