/* fuzz_allowlist.c — libFuzzer target: sbx-broker's workload allowlist
 * (npu.md 2.2) on arbitrary JSON, and every accepted workload's command
 * templates scanned the way a job start reads them. An accepted entry
 * always has an id, a program and requiredInputs of only configPath. */
#include "../src/sbx-broker/allowlist.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, 0, NULL);
	if (!doc)
		return 0;
	struct broker b;
	struct sbx_error e;
	memset(&b, 0, sizeof(b));
	strcpy(b.config, "fuzz.json");
	if (broker_parse_allowlist(&b, doc, &e) == 0) {
		size_t i;
		json_t *w;
		json_array_foreach(b.workloads, i, w) {
			if (!json_string_value(json_object_get(w, "id")) || !json_string_value(json_object_get(w, "program")))
				abort();
			size_t k;
			json_t *in;
			json_array_foreach(json_object_get(w, "requiredInputs"), k, in)
				if (strcmp(json_string_value(in), "configPath") != 0)
					abort();
		}
		json_t *cap = broker_capability(&b);
		json_decref(cap);
	}
	json_decref(b.workloads);
	json_decref(doc);
	return 0;
}
