/* launch_exec.h — replacing this process with bwrap: empty environment,
 * no core dumps, the filter on fd 3 and no other inherited fd. */
#ifndef SBX_LAUNCH_EXEC_H
#define SBX_LAUNCH_EXEC_H

#include "error.h"

/* Opens /dev/null on any of fds 0-2 that is closed, so no later open()
 * lands there and leaks into the sandbox as stdin or stdout. */
void sbx_stdio_sanitize(void);

#define SBX_INFO_FD 4 /* where bwrap writes {"child-pid": N} when asked */

/* Only returns on failure. info_fd (-1: none) becomes fd 4. */
int sbx_launch_exec(const char *bwrap, char *const argv[], int seccomp_fd, int info_fd, struct sbx_error *e);

#endif
