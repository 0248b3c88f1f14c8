/* capabilities.c — the supervisor narrowed before it touches the workload:
 * not dumpable, and as root the intersection of the capabilities the run
 * needs and those it was given (lib/supervisor_caps.c), what is lost said
 * on stderr and in the mode event. */
#include "run.h"
#include "../lib/diag.h"
#include "../lib/supervisor_caps.h"

#include <sys/prctl.h>
#include <unistd.h>

/* Not dumpable: the workload can neither ptrace the supervisor nor read its
 * memory through /proc. As root only chown and setuid/setgid (hand the
 * workspace to the workload's uid), dac_read_search (walk and snapshot what
 * it wrote), fowner (clear the set-id bits it left), kill (stop it) and
 * setpcap (the egress gateway empties its bounding set) stay, in the
 * bounding set too, so sbx-launch (exec'd as root) inherits no more;
 * dac_override is only permitted, raised just to make the run's cgroups (a
 * v1 hierarchy's root is mode 0555), unless it stands in for a missing
 * dac_read_search. */
int run_narrow_capabilities(struct run *r, struct sbx_error *e)
{
	struct sbx_supervisor_caps caps;
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	r->dev_mode = geteuid() != 0;
	if (r->dev_mode) {
		r->missing_caps = json_array();
		return 0;
	}
	if (sbx_supervisor_caps_check(&caps, e) != 0)
		return -1;
	r->missing_caps = caps.missing;
	r->have_dac_override = caps.have_dac_override;
	r->dac_override_held = caps.dac_override_held;
	size_t i;
	json_t *m;
	json_array_foreach(r->missing_caps, i, m)
		sbx_diag("warning", "capability-missing", NULL, "%s is not given: %s",
			 json_string_value(json_object_get(m, "capability")), json_string_value(json_object_get(m, "lost")));
	return sbx_supervisor_caps_apply(&caps, e);
}
