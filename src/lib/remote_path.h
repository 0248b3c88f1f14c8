/* remote_path.h — the grammars of runner-api 5.7 (remote workspace keys,
 * workspace-relative file paths) and a remote workspace as a directory fd:
 * sbx-httpd's request checks and sbx-ws's store share them. */
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
/* <data>/remote-workspaces/<key> as an O_RDONLY | O_DIRECTORY fd, every
 * component a real directory (created 0755 when create; a symlink
 * anywhere, remote-workspaces included, refused): the fd every operation
 * on the workspace is relative to. -1 with errno ELOOP for a symlink,
 * ENOENT when missing and !create, ENOTDIR for a file on the way. */
int sbx_remote_workspace_open(const char *data_dir, const char *key, bool create);
/* <data>/remote-workspaces as a directory fd, a real directory (made
 * 0755 when create); -1 with errno (ELOOP: a symlink). */
int sbx_remote_workspaces_root(const char *data_dir, bool create);

#endif
