/* snap_call.h — sbx-snap's history commands as a stage, on a workspace
 * fd: how sbx-httpd (a workspaceRoot) and sbx-ws (a key) ask it. */
#ifndef SBX_SNAP_CALL_H
#define SBX_SNAP_CALL_H

#include "error.h"

#include <jansson.h>
#include <stddef.h>

#define SBX_SNAP_CALL_FDS_MAX 65 /* the workspace and 64 forks */

/* Runs `program args... --store store --workspace-fd 3 [--state-dir
 * lease_dir] [--into-fd 4 ...]` with fds[0] as its fd 3 and each further
 * fd (a fork's target) as 4, 5, ...; lease_dir is left out for
 * "versions". Its JSON answer, or NULL with e (the stage's diagnostic).
 * Bounded: 15 minutes (a fork at the byte cap, by copies), 256 MiB of
 * answer (a diff). */
json_t *sbx_snap_call(const char *program, const char *store, const char *lease_dir, const char *const *args,
		      const int *fds, size_t n_fds, struct sbx_error *e);

#endif
