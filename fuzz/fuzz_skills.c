/* fuzz_skills.c — libFuzzer target: sbx-skills' bundle check on arbitrary
 * bytes. A refusal is bad-input (exit 2) with a message; a bundle that
 * passes has a 64-hex id, and every file decoded to exactly its size with
 * a clean relative path. */
#include "../src/sbx-skills/bundle.c" /* sbx-skills' own checks */

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = NULL, *s, *f;
	struct sbx_error e;
	char id[SBX_SHA256_HEX_LEN + 1];
	size_t i, k;
	if (bundle_check((const char *)data, size, &doc, id, &e) != 0) {
		if (doc || e.exit_code != 2 || strcmp(e.code, "bad-input") != 0 || !e.message[0])
			abort();
		return 0;
	}
	if (strlen(id) != SBX_SHA256_HEX_LEN || strspn(id, "0123456789abcdef") != SBX_SHA256_HEX_LEN)
		abort();
	json_array_foreach(json_object_get(doc, "skills"), i, s)
		json_array_foreach(json_object_get(s, "files"), k, f) {
			const char *path = json_string_value(json_object_get(f, "path"));
			json_t *bytes = bundle_file_bytes(f);
			if (!path || !sbx_path_plain_relative(path) || !bytes ||
			    json_string_length(bytes) != (size_t)json_integer_value(json_object_get(f, "size")))
				abort();
		}
	json_decref(doc);
	return 0;
}
