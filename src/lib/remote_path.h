/* remote_path.h — the grammars of runner-api 5.7 (remote workspace keys,
 * workspace-relative file paths) and a walk below a directory that never
 * follows a symlink, for writes. */
#ifndef SBX_REMOTE_PATH_H
#define SBX_REMOTE_PATH_H

#include <stdbool.h>
#include <stddef.h>

#define SBX_REMOTE_KEY_MAX 500
#define SBX_REMOTE_PATH_MAX 2000

/* The trimmed key (into out) when it is valid: not absolute, no '\',
 * at most 500 characters, every '/' segment of [A-Za-z0-9._-] and not
 * "." or "..". */
bool sbx_remote_key(const char *raw, char *out, size_t size);
/* The trimmed relative path (into out) when valid: not absolute, no '\',
 * at most 2000 characters, no empty, "." or ".." segment. */
bool sbx_remote_rel_path(const char *raw, char *out, size_t size);
/* <data>/remote-workspaces/<key>, each component a real directory
 * (created when create; a symlink anywhere, the root included, refused).
 * 0, -1 (errno ELOOP for a symlink, ENOENT when missing and !create). */
int sbx_remote_workspace_dir(const char *data_dir, const char *key, bool create, char *out, size_t size);
/* The directory holding rel below rootfd, walked one O_NOFOLLOW component
 * at a time (created 0755 when create); its fd, with the last component in
 * *leaf (a pointer into rel). -1 with errno ELOOP on a symlink. */
int sbx_beneath_parent(int rootfd, const char *rel, bool create, const char **leaf);

#endif
