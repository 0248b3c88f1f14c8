/* workspace_owner.h — makes a workspace writable by the workload's uid by
 * ownership: every entry not already owned by uid:gid is chowned, so files
 * the host added between runs (an upload as root) become writable too.
 * Ownership, not default ACLs: an ACL's mask follows the creating mode
 * (an upload made 0600 would still be unwritable) and a rename into the
 * tree inherits nothing; ownership holds whatever the host did. */
#ifndef SBX_WORKSPACE_OWNER_H
#define SBX_WORKSPACE_OWNER_H

#include "error.h"

#include <sys/types.h>

#define SBX_WORKSPACE_MAX_DEPTH 512

/* Walks rootfd (any directory fd, O_PATH too; name is for messages) by
 * directory fds (never by path, so a swapped component cannot
 * redirect it), stays on root's filesystem, never follows symlinks, and
 * skips non-directories with more than one link (they may be shared with
 * files outside). Returns the number of entries changed, or -1. */
long sbx_workspace_own_at(int rootfd, const char *name, uid_t uid, gid_t gid, struct sbx_error *e);

/* After an install sandbox: the root and every entry owned by uid or gid
 * (hard links included) become root:root, by the same walk. Returns the
 * number changed, or -1. */
long sbx_tree_disown_at(int rootfd, const char *name, uid_t uid, gid_t gid, struct sbx_error *e);
/* After a run: clears the set-uid and set-gid bits of every regular file
 * below rootfd (the same walk; each file opened O_NOFOLLOW | O_NONBLOCK and
 * checked regular before its fchmod). It keeps going past a failure; a
 * directory deeper than SBX_WORKSPACE_MAX_DEPTH is removed, with all it
 * holds (the run that made it broke a bound), and *removed counts those.
 * Returns how many bits it cleared, or -1 when some file could not be
 * reached (e says why). */
long sbx_workspace_clear_setid(int rootfd, const char *name, long *removed, struct sbx_error *e);

#endif
