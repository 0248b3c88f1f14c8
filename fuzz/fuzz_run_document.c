/* fuzz_run_document.c — libFuzzer target: a job's run document from
 * arbitrary JSON, claimed and then parsed in full (as sbx-run does after
 * the bootstrap fetch). Either accepted or refused with a message. */
/* sbx-run's own reader, with what it calls */
#include "../src/sbx-run/curl_dl.c"
#include "../src/sbx-run/event_sign.c"
#include "../src/sbx-run/object_store.c"
#include "../src/sbx-run/document.c"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct sbx_curl *curl;
	struct sbx_error e;
	if (!curl && !(curl = sbx_curl_load(&e)))
		abort();
	json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!doc)
		return 0;
	const char *del = NULL;
	memset(&e, 0, sizeof(e));
	if (sbx_run_document_claim(doc, "r1", "nonce-0123456789", &del, &e) != 0 && !e.message[0])
		abort();
	struct sbx_run_document d;
	memset(&e, 0, sizeof(e));
	if (sbx_run_document_parse(doc, curl, &d, &e) != 0 && !e.message[0])
		abort();
	sbx_run_document_free(&d);
	json_decref(doc);
	return 0;
}
