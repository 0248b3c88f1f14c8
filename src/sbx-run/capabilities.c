/* capabilities.c — the supervisor narrowed to the intersection of what a run
 * needs and what it was given (a container's default set lacks some): it
 * runs with what remains when that suffices, says what is lost, and refuses
 * with a remedy naming the capability only when a missing one is essential. */
#include "run.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"

#include <cap-ng.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* What the run needs as root, and what a run without it loses. An
 * essential one (lost == NULL) cannot be done without. */
static const struct wanted {
	int cap;
	const char *name;
	const char *lost; /* NULL: essential */
	const char *why;
} wanted[] = {
	{ CAP_CHOWN, "CAP_CHOWN", NULL, "hand the workspace to the workload's uid" },
	{ CAP_SETUID, "CAP_SETUID", NULL, "run the workload as its own uid" },
	{ CAP_SETGID, "CAP_SETGID", NULL, "run the workload as its own gid" },
	{ CAP_KILL, "CAP_KILL", NULL, "stop the workload, which runs as another uid" },
	{ CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH", "dac_override stands in for it (held for the run)",
	  "walk what the workload wrote (quota, snapshot) whatever modes it set" },
	{ CAP_FOWNER, "CAP_FOWNER", NULL, "clear the set-id bits the workload leaves on its files" },
	{ CAP_SETPCAP, "CAP_SETPCAP",
	  "the bounding set is not narrowed: sbx-launch and the egress gateway start with the one given",
	  "narrow the bounding set sbx-launch and the egress gateway inherit" },
	{ CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE",
	  "cgroups are made only where the hierarchy lets its owner write without it (else limits fall back "
	  "as without cgroups)",
	  "make the run's cgroups" },
};
#define N_WANTED (sizeof(wanted) / sizeof(wanted[0]))

static bool given(int cap)
{
	return capng_have_capability(CAPNG_PERMITTED, (unsigned)cap) != 0;
}

/* Narrows the supervisor before it touches the workload: not dumpable (the
 * workload cannot ptrace it or read its memory through /proc), and as root
 * only the capabilities the run needs (chown and setuid/setgid to hand the
 * workspace to the workload's uid, dac_read_search to walk and snapshot
 * what it wrote, fowner to clear the set-id bits it left, kill to stop it,
 * setpcap so the egress gateway can empty its bounding set), in the
 * bounding set too, so sbx-launch (exec'd as root) inherits no more;
 * dac_override is only permitted, raised just to make the run's cgroups
 * (a v1 hierarchy's root is mode 0555), unless it stands in for a missing
 * dac_read_search. */
int run_narrow_capabilities(struct run *r, struct sbx_error *e)
{
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	r->dev_mode = geteuid() != 0;
	r->missing_caps = json_array();
	if (r->dev_mode)
		return 0;
	capng_get_caps_process();
	bool have[N_WANTED];
	for (size_t i = 0; i < N_WANTED; i++)
		have[i] = given(wanted[i].cap);
	bool read_search = given(CAP_DAC_READ_SEARCH);
	r->have_dac_override = given(CAP_DAC_OVERRIDE);
	r->dac_override_held = !read_search && r->have_dac_override;
	for (size_t i = 0; i < N_WANTED; i++) {
		if (have[i])
			continue;
		bool essential = !wanted[i].lost || (wanted[i].cap == CAP_DAC_READ_SEARCH && !r->dac_override_held);
		if (essential)
			return sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "capability-missing",
					     "sbx-run runs as root without %s, which it needs to %s%s; give it that "
					     "capability (a container: --cap-add %s)",
					     wanted[i].name, wanted[i].why,
					     wanted[i].cap == CAP_DAC_READ_SEARCH ? " (nor CAP_DAC_OVERRIDE to stand in)" : "",
					     wanted[i].name + 4),
			       -1;
		sbx_diag("warning", "capability-missing", NULL, "%s is not given: %s", wanted[i].name, wanted[i].lost);
		json_array_append_new(r->missing_caps, json_pack("{s:s,s:s}", "capability", wanted[i].name, "lost",
								  wanted[i].lost));
	}
	bool bounds = given(CAP_SETPCAP); /* the bounding set can be narrowed */
	capng_clear(bounds ? CAPNG_SELECT_BOTH : CAPNG_SELECT_CAPS);
	for (size_t i = 0; i < N_WANTED; i++) {
		if (!have[i] || wanted[i].cap == CAP_DAC_OVERRIDE)
			continue;
		if (capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | (bounds ? CAPNG_BOUNDING_SET : 0),
				 (unsigned)wanted[i].cap) != 0)
			goto failed;
	}
	if (r->have_dac_override &&
	    capng_update(CAPNG_ADD,
			 CAPNG_PERMITTED | (r->dac_override_held ? CAPNG_EFFECTIVE | (bounds ? CAPNG_BOUNDING_SET : 0) : 0),
			 CAP_DAC_OVERRIDE) != 0)
		goto failed;
	if (capng_apply(bounds ? CAPNG_SELECT_BOTH : CAPNG_SELECT_CAPS) != 0)
		goto failed;
	return 0;
failed:
	return sbx_error_set(e, SBX_EXIT_INTERNAL, "capabilities", "cannot narrow the supervisor's capabilities"), -1;
}
