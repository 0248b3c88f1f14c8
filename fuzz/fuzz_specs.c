/* fuzz_specs.c — libFuzzer target: a launch spec, an execution request and
 * an egress policy parsed from the same arbitrary JSON (each validator
 * walks the whole document before touching anything). Parsers either
 * accept or fail with a message naming a field; nothing else. */
#include "egress_policy.h"
#include "launch_spec.h"
#include "run_request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!doc)
		return 0;
	struct sbx_error e;
	struct sbx_launch_spec spec;
	memset(&e, 0, sizeof(e));
	if (sbx_launch_spec_parse(doc, &spec, &e) != 0 && !e.message[0])
		abort();
	sbx_launch_spec_free(&spec);

	struct sbx_run_request req;
	memset(&req, 0, sizeof(req));
	memset(&e, 0, sizeof(e));
	json_t *copy = json_deep_copy(doc);
	if (sbx_run_request_parse(copy, &req, &e) != 0 && !e.message[0])
		abort();
	sbx_run_request_free(&req);
	json_decref(copy);

	struct sbx_egress_policy policy;
	memset(&e, 0, sizeof(e));
	if (sbx_egress_policy_parse(doc, &policy, &e) != 0 && !e.message[0])
		abort();
	sbx_egress_policy_free(&policy);
	json_decref(doc);
	return 0;
}
