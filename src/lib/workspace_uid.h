/* workspace_uid.h — each workspace its own uid from a configured range
 * (SBX_UID_RANGE, as root): RLIMIT_NPROC on it caps one execution, and an
 * escape as one workspace's uid owns no other workspace's files. */
#ifndef SBX_WORKSPACE_UID_H
#define SBX_WORKSPACE_UID_H

#include "error.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SBX_UID_RANGE_DEFAULT "2000000000-2000065535"

struct sbx_uid_range {
	uid_t first;
	uint32_t count; /* 0: off, every workspace runs as the shared sandbox uid */
};

/* SBX_UID_RANGE: "FIRST-LAST" (inclusive), "off", or unset/empty for the
 * default. It may not hold 0 or the shared sandbox uid (exit 2, named). */
int sbx_uid_range_from_env(struct sbx_uid_range *r, uid_t shared, struct sbx_error *e);

/* The workspace's uid, held in registry_dir (one file per uid naming the
 * workspace's device and inode, created 0700 by root; flock'd while
 * looked up): the uid the workspace root is owned by when the registry
 * says it is this workspace's, else the first free one from a hash of
 * its identity. Exit 6 when the range is full. */
int sbx_workspace_uid(const char *registry_dir, int ws_fd, const struct sbx_uid_range *r, uid_t *out,
		      struct sbx_error *e);

/* <data dir>/workspace-uids (SBX_DATA_DIR, as every stage sees it). */
int sbx_workspace_uid_registry(char *out, size_t size);

/* A workspace about to be deleted gives its uid back: the entry of the uid
 * that owns ws_fd goes if it names this workspace. 0, or -1 (nothing held). */
int sbx_workspace_uid_release(const char *registry_dir, int ws_fd);

#endif
