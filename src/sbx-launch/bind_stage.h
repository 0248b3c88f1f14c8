/* bind_stage.h — every host object bwrap binds by fd, made reachable by a
 * path the workload uid can walk: bwrap (0.8) finds a bound fd again by
 * its name, as that uid, before it mounts it. */
#ifndef SBX_LAUNCH_BIND_STAGE_H
#define SBX_LAUNCH_BIND_STAGE_H

#include "../lib/error.h"
#include "plan.h"

/* The launcher's own mount namespace (private to this launch and the
 * sandbox it execs), with a tmpfs on SBX_BIND_STAGE_DIR where each bound
 * fd of the plan is mounted again as <slot>; the plan's fds are replaced
 * by fds of those mounts, so every component of the path bwrap walks is
 * root's and world-searchable wherever the host object lives. As root,
 * before the switch. 0: staged (or nothing to stage); 1: not staged, the
 * plan unchanged (no CAP_SYS_ADMIN or a read-only /run: every bound
 * object must then be reachable by the workload uid); -1 (and why) when /run/sbx-launch is
 * not a root-owned directory or a namespace could not be finished. */
int sbx_bind_stage(struct sbx_launch_plan *plan, struct sbx_error *e);

#define SBX_BIND_STAGE_DIR "/run/sbx-launch"

#endif
