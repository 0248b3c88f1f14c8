/* restore.h — sbx-snap's readers of stored trees: the difference of two
 * snapshots and a snapshot recreated in a directory. */
#ifndef SBX_SNAP_RESTORE_H
#define SBX_SNAP_RESTORE_H

#include "../lib/snap_store.h"

/* {created, modified, deleted}: files and symlinks by path. */
json_t *sbx_snap_diff(const char *store, const char *a, const char *b, struct sbx_error *e);
/* Recreates a snapshot in dir (absent or empty); contents are verified. */
int sbx_snap_restore(const char *store, const char *digest, const char *dir, struct sbx_error *e);

#endif
