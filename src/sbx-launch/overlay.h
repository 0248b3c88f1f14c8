/* overlay.h — a speculative launch: the workload sees the workspace
 * through an overlay whose changes land in the spec's workspaceOverlay
 * directory (upper/), never in the workspace itself. */
#ifndef SBX_LAUNCH_OVERLAY_H
#define SBX_LAUNCH_OVERLAY_H

#include "../lib/error.h"
#include "../lib/launch_spec.h"
#include "plan.h"

#include <stdbool.h>

/* Mounts the overlay (lower: the workspace; upper/ and work/ of the
 * overlay directory) in this process's own mount namespace and puts its
 * merged directory in the workspace's bind slot (and the skill extensions
 * below it in theirs). staged: as root, inside the bind staging's
 * namespace (bind_stage.h), the overlay using trusted.* xattrs; otherwise
 * a user namespace of its own mapping this uid and gid, the overlay using
 * user.* xattrs (userxattr). The mount goes with the namespace when the
 * sandbox ends. -1 (exit 4, with a remedy) when the kernel refuses it. */
int sbx_overlay_mount(struct sbx_launch_plan *plan, const struct sbx_launch_spec *spec, bool staged,
		      struct sbx_error *e);

#endif
