/* devices.c — the run's accelerators: right before the launch (after the
 * workspace lease, so never from a stale listing) `sbx-npu fragment`
 * re-probes exactly the requested chips; the fragment joins the spec, or
 * the execution fails naming every chip that is not usable. */
#include "run.h"
#include "../lib/program_path.h"
#include "../lib/exitcodes.h"
#include "../lib/npu_inventory.h"
#include "../lib/spawn.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

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
	struct sbx_capture c;
	if (sbx_spawn_capture(&s, FRAGMENT_TIMEOUT_MS, FRAGMENT_CAP, &c, e) != 0)
		return -1;
	json_t *doc = NULL;
	bool ok = !c.timed_out && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0 &&
		  (doc = json_loadb(c.out, c.out_len, 0, NULL)) && json_is_object(json_object_get(doc, "devices"));
	if (ok) {
		json_object_set(q->spec, "devices", json_object_get(doc, "devices"));
	} else {
		char why[900];
		sbx_npu_reason_line(c.err, c.out, why, sizeof(why));
		sbx_error_set(e, c.timed_out ? SBX_EXIT_TIMEOUT : SBX_EXIT_POLICY, "npu-unavailable", "%s",
			      c.timed_out ? "devices: the accelerator probe timed out" : why[0] ? why : "devices: sbx-npu failed");
	}
	json_decref(doc);
	sbx_capture_free(&c);
	return ok ? 0 : -1;
}
