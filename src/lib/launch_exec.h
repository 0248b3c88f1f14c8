/* launch_exec.h — replacing this process with bwrap: empty environment,
 * no core dumps, the filter on fd 3 and no other inherited fd. */
#ifndef SBX_LAUNCH_EXEC_H
#define SBX_LAUNCH_EXEC_H

#include "error.h"

/* Opens /dev/null on any of fds 0-2 that is closed, so no later open()
 * lands there and leaks into the sandbox as stdin or stdout. */
void sbx_stdio_sanitize(void);

/* Only returns on failure. */
int sbx_launch_exec(const char *bwrap, char *const argv[], int seccomp_fd, struct sbx_error *e);

#endif
