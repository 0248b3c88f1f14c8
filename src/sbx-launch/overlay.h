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
 * overlay directory, both the workload's) and puts its merged directory
 * in the workspace's bind slot (and the skill extensions below it in
 * theirs). Called as the workload's uid, after the switch: a user
 * namespace of its own (this uid and gid mapped to themselves) owns a
 * mount namespace where overlayfs mounts with userxattr, so every copy-up
 * is made with the workload's own credentials (never root's: no file of
 * another owner, no trusted.* mark) and bwrap then runs inside it. staged:
 * the layers are reached as the bind staging placed them (bind_stage.h);
 * otherwise their directories are opened again by name and checked to be
 * the same. The mount goes with the namespace when the sandbox ends. -1
 * (exit 4, with a remedy) when the kernel refuses it. */
int sbx_overlay_mount(struct sbx_launch_plan *plan, const struct sbx_launch_spec *spec, bool staged,
		      struct sbx_error *e);

#endif
