/* apply.h — a pending change written into its workspace: staged whole
 * first (every file and symlink copied into a directory of the workspace,
 * so a full disk or a bad entry leaves the workspace as it was), then
 * moved into place path by path, each parent opened below the workspace
 * with no symlink at any level. */
#ifndef SBX_RUN_APPLY_H
#define SBX_RUN_APPLY_H

#include "../lib/error.h"

#include <jansson.h>
#include <stdint.h>

struct apply_counts {
	uint64_t files, dirs, symlinks, removed, skipped, bytes;
};

/* Applies upper (an overlay's upper layer; marks in xattrs' namespace)
 * to ws: whiteouts remove, opaque directories are emptied first, files
 * are copied (a hard link's names each a file of its own) with their
 * permission bits and no set-id or sticky bit, symlinks are made as
 * symlinks (never followed), fifos, sockets and devices are skipped
 * (listed in skipped); everything made is owned by the owner of ws's
 * root. 0, or -1 with e: before the first move nothing has changed. */
int apply_change(int upper, const char *xattrs, int ws, struct apply_counts *n, json_t *skipped, struct sbx_error *e);

#endif
