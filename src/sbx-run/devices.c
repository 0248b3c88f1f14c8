/* devices.c — the run's accelerators: right before the launch (after the
 * workspace lease, so never from a stale listing) `sbx-npu fragment`
 * re-probes exactly the requested chips; the fragment joins the spec, or
 * the execution fails naming every chip that is not usable. */
#include "run.h"
#include "../lib/program_path.h"
#include "../lib/exitcodes.h"
#include "../lib/stage_call.h"

#include <stdio.h>
#include <string.h>

#define FRAGMENT_TIMEOUT_MS 120000
#define FRAGMENT_CAP (1u << 20)

int run_devices_attach(struct run *r, struct sbx_error *e)
{
	const struct sbx_run_request *q = &r->req;
	char npu[PATH_MAX], chips[64 * 6] = "";

	if (q->n_chips == 0)
		return 0;
	if (sbx_sibling_program("sbx-npu", npu, sizeof(npu)) != 0) {
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "npu-unavailable", "devices: sbx-npu is not installed next to sbx-run");
		return -1;
	}
	for (size_t i = 0; i < q->n_chips; i++)
		snprintf(chips + strlen(chips), sizeof(chips) - strlen(chips), "%s%d", i ? "," : "", q->chips[i]);
	const char *argv[] = { npu, "--vendor", q->device_vendor, "fragment", "--chips", chips, NULL };
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .new_process_group = true, .die_with_parent = true,
			       .helper = true };
	json_t *doc = sbx_stage_call(&s, FRAGMENT_TIMEOUT_MS, FRAGMENT_CAP, e);
	bool ok = json_is_object(json_object_get(doc, "devices"));
	if (ok) {
		json_object_set(q->spec, "devices", json_object_get(doc, "devices"));
	} else if (e->exit_code == SBX_EXIT_TIMEOUT) {
		sbx_error_set(e, SBX_EXIT_TIMEOUT, "npu-unavailable", "devices: the accelerator probe timed out");
	} else {
		if (doc)
			sbx_error_set(e, SBX_EXIT_POLICY, "npu-unavailable", "devices: sbx-npu answered no devices");
		e->exit_code = SBX_EXIT_POLICY;
		snprintf(e->code, sizeof(e->code), "npu-unavailable");
	}
	json_decref(doc);
	return ok ? 0 : -1;
}
