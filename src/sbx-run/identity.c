/* identity.c — who a run's workload is: as root, the workspace's own uid
 * from SBX_UID_RANGE with the shared sandbox gid. */
#include "run.h"
#include "../lib/exitcodes.h"
#include "../lib/workspace_uid.h"

#include <stdio.h>
#include <stdlib.h>

/* Who the workload runs as: as root, the workspace's own uid from
 * SBX_UID_RANGE (with the shared sandbox gid, which reaches the data
 * root), handed to sbx-launch as SBX_RUN_AS; otherwise the shared one. */
int run_workload_identity(struct run *r, const struct sbx_run_as *who, struct sbx_run_as *out, struct sbx_error *e)
{
	struct sbx_uid_range range;
	char registry[PATH_MAX + 32], value[32];
	*out = *who;
	if (!who->switch_user)
		return 0;
	if (sbx_uid_range_from_env(&range, who->uid, e) != 0)
		return -1;
	if (!range.count)
		return 0;
	if (sbx_workspace_uid_registry(registry, sizeof(registry)) != 0)
		return sbx_error_set(e, SBX_EXIT_USAGE, "path-too-long", "data directory path too long"), -1;
	if (sbx_workspace_uid(registry, r->req.ws.fd, &range, &out->uid, e) != 0)
		return -1;
	snprintf(value, sizeof(value), "%u:%u", (unsigned)out->uid, (unsigned)out->gid);
	setenv("SBX_RUN_AS", value, 1);
	r->workload_uid = (long long)out->uid;
	return 0;
}
