/* exec.h — replacing this process with bwrap: empty environment,
 * no core dumps, the filter on fd 3 and no other inherited fd. */
#ifndef SBX_LAUNCH_EXEC_H
#define SBX_LAUNCH_EXEC_H

#include "../lib/error.h"
#include "plan.h"

#include <stddef.h>

/* Opens /dev/null on any of fds 0-2 that is closed, so no later open()
 * lands there and leaks into the sandbox as stdin or stdout. */
void sbx_stdio_sanitize(void);

#define SBX_INFO_FD 4    /* where bwrap writes {"child-pid": N} when asked */
#define SBX_CHANNEL_FD 5 /* the worker channel's end, inside the sandbox */

/* Only returns on failure. info_fd and channel_fd (-1: none) become fds
 * 4 and 5; bwrap passes 5 on to the workload (it consumes 3 and 4). A
 * launch that reports denials adds the notifying filter and the
 * supervisor's socket as 6 and 7, for sbx-seccomp-notify. The
 * n_bind directory fds become 8, 9, ... (SBX_BIND_FD_FIRST), which bwrap
 * mounts and closes; nothing else is inherited. The plan's file size
 * limit becomes RLIMIT_FSIZE, so no single file (a fallocate) outgrows it. */
struct sbx_launch_fds {
	int seccomp, info, channel, notify_filter, notify_socket; /* -1: none */
};
int sbx_launch_exec(const char *bwrap, const struct sbx_launch_plan *plan, const struct sbx_launch_fds *fds,
		    struct sbx_error *e);

#endif
