/* launch_hold.c — the run's cgroups and the sandbox's first process,
 * made before the launch is known (at the start, or in a standby before
 * its request) so the cgroup join waits while sbx-run prepares. */
#include "run.h"
#include "../lib/exitcodes.h"

#include <cap-ng.h>
#include <string.h>

/* dac_override gone from the effective set, and from the permitted set
 * too unless keep (a standby may have to make its cgroups again); held
 * where it stands in for a missing dac_read_search (capabilities.c). */
static int drop_dac_override(const struct run *r, bool keep, struct sbx_error *e)
{
	if (r->dac_override_held || !r->have_dac_override)
		return 0;
	if (!r->dev_mode && (capng_update(CAPNG_DROP, CAPNG_EFFECTIVE | (keep ? 0 : CAPNG_PERMITTED), CAP_DAC_OVERRIDE) != 0 ||
			     capng_apply(CAPNG_SELECT_CAPS) != 0))
		return sbx_error_set(e, SBX_EXIT_INTERNAL, "capabilities", "cannot drop dac_override"), -1;
	return 0;
}

/* The run's cgroups, made with dac_override raised just for that. */
static int create_cgroups(struct run *r, const char *id, const struct sbx_run_limits *limits, bool keep,
			  struct sbx_error *e)
{
	if (!r->dev_mode && r->have_dac_override && !r->dac_override_held &&
	    (capng_update(CAPNG_ADD, CAPNG_EFFECTIVE, CAP_DAC_OVERRIDE) != 0 || capng_apply(CAPNG_SELECT_CAPS) != 0))
		return sbx_error_set(e, SBX_EXIT_INTERNAL, "capabilities", "cannot raise dac_override for the cgroups"), -1;
	int rc = sbx_cgroup_create(id, limits, &r->cg, e);
	if (drop_dac_override(r, keep, e) != 0) {
		sbx_cgroup_remove(&r->cg);
		return -1;
	}
	return rc;
}

/* The sandbox's first process, forked now: its cgroup join (an RCU grace
 * period on cgroup v1) runs while the rest is prepared. A failure is kept
 * for the run to report. */
void run_hold_launch(struct run *r, const char *id, const struct sbx_run_limits *limits, bool keep)
{
	memset(&r->held_error, 0, sizeof(r->held_error));
	if ((create_cgroups(r, id, limits, keep, &r->held_error) != 0 ||
	     sbx_sandbox_hold(r->cg.procs_fd, SBX_CG_DIRS, &r->held, &r->held_error) != 0) &&
	    !r->held_error.exit_code)
		r->held_error.exit_code = SBX_EXIT_INTERNAL;
}

/* A standby's cgroups were made for the default limits: kept when they
 * hold the request's exactly, else made again for it. */
void run_adopt_launch(struct run *r)
{
	struct sbx_error e;
	if (r->held_error.exit_code || sbx_cgroup_adopt(&r->cg, &r->req.limits, &e) != 1) {
		sbx_spawn_discard(&r->held);
		sbx_cgroup_remove(&r->cg);
		run_hold_launch(r, r->req.execution_id, &r->req.limits, false);
	} else {
		drop_dac_override(r, false, &r->held_error);
	}
}
