/* workspace.h — opening a workspace the API names, by root or by key. */
#ifndef SBX_HTTPD_WORKSPACE_H
#define SBX_HTTPD_WORKSPACE_H

#include "../lib/error.h"

#include <stdbool.h>
#include <stddef.h>

/* A directory the API names (a workspaceRoot), opened below <data>/projects
 * or <data>/remote-workspaces with no symlink or ".." at any level and no
 * runner-owned ("."-prefixed) child of a root: its fd (name in shown), or
 * -1 with the upstream-style message in e. */
int workspace_open_root(const char *path, char *shown, size_t size, struct sbx_error *e);
/* <data>/remote-workspaces/<key> from a raw runnerWorkspaceKey (made when
 * create), opened in one walk with no symlink: its fd, or -1 with e. */
int workspace_open_key(const char *raw, bool create, char *shown, size_t size, struct sbx_error *e);

#endif
