/* change_set.h — what a speculative run would change in its workspace,
 * read from the overlay's upper layer against the scan of the workspace
 * taken when the run began: created, modified, deleted and type-changed
 * entries with sizes and sha256 digests; whiteouts and opaque directories
 * become deletions; fifos, sockets and devices are listed as skipped. */
#ifndef SBX_RUN_CHANGE_SET_H
#define SBX_RUN_CHANGE_SET_H

#include "../lib/error.h"
#include "../lib/snap_scan.h"

#include <jansson.h>

/* {changes: [{path, change, type, size?, sha256?, target?, previous?}],
 * skipped: [{path, type, reason}], counts: {created, modified, deleted,
 * typeChanged, skipped}, bytes} sorted by path; ws (the lower layer, a
 * directory fd) gives a modified file's previous digest. Every file name
 * counts its whole size against max_bytes (0: none): a commit copies each
 * name of a hard-linked inode, which the run's quota charged once.
 * NULL with e. */
json_t *change_set_read(int upper, const char *xattr_ns, const struct sbx_snap_scan *before, int ws,
			uint64_t max_bytes, struct sbx_error *e);

/* The sha256 of a regular file below parent, opened without following a
 * symlink and without blocking (hex into out). 0, or -1 with errno. */
int change_set_digest(int fd, char out[65]);

#endif
