/* workspace.c — the one place sbx-httpd opens a workspace: a path below
 * <data>/projects or <data>/remote-workspaces, or a remote key, each
 * walked once with no symlink and no ".." on the way; the fd is all that
 * is used from then on. */
#include "workspace.h"
#include "server.h"
#include "../lib/beneath.h"
#include "../lib/datadir.h"
#include "../lib/exitcodes.h"
#include "../lib/path.h"
#include "../lib/remote_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

static int fail(struct sbx_error *e, const char *fmt, const char *a)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", fmt, a);
	return -1;
}

/* The directory path names, opened below <data>/projects or
 * <data>/remote-workspaces with no symlink and no ".." at any level
 * (beneath.h); the fd is all that is used from here on. Runner-owned
 * entries (any "."-prefixed child of a root) are refused. */
int workspace_open_root(const char *path, char *shown, size_t size, struct sbx_error *e)
{
	static const enum sbx_data_area roots[] = { SBX_DATA_PROJECTS, SBX_DATA_REMOTE_WORKSPACES };
	char root[PATH_MAX + 32], rel[PATH_MAX];
	for (int i = 0; i < 2; i++) {
		sbx_data_path(g_server.cfg.data_dir, roots[i], NULL, root, sizeof(root));
		if (sbx_path_below(root, path, rel, sizeof(rel)) != 0 || !rel[0])
			continue;
		if (!sbx_path_plain_relative(rel))
			return fail(e, "%s", "Runner workspace path must not contain '.' or '..' segments");
		if (rel[0] == '.')
			return fail(e, "%s", "Runner workspace must not be a runner-owned directory");
		/* A root that is itself a symlink (or missing) holds nothing. */
		int rootfd = open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (rootfd < 0)
			continue;
		int fd = sbx_open_beneath(rootfd, rel, O_PATH | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
		int saved = errno;
		close(rootfd);
		if (fd < 0 && saved == ENOENT)
			return fail(e, "ENOENT: no such file or directory, realpath '%s'", path);
		if (fd < 0 && saved == ENOTDIR)
			return fail(e, "%s", "Runner workspace must be a directory");
		if (fd < 0)
			return fail(e, "%s", saved == ELOOP ? "Runner workspace path must not contain symbolic links"
								  : "Runner workspace path must not contain '.' or '..' segments");
		if (sbx_fd_path(fd, shown, size) != 0)
			snprintf(shown, size, "%s", path);
		return fd;
	}
	return fail(e, "%s", "Runner workspace must be inside the configured projects or remote-workspaces directory");
}

/* A key names <data>/remote-workspaces/<key>, made on demand when create. */
int workspace_open_key(const char *raw, bool create, char *shown, size_t size, struct sbx_error *e)
{
	char clean[SBX_REMOTE_KEY_MAX + 1];
	if (!sbx_remote_key(raw, clean, sizeof(clean)))
		return fail(e, "%s", "Invalid remote workspace key");
	/* Made on demand and opened in one walk with no symlink on the way. */
	int fd = sbx_remote_workspace_open(g_server.cfg.data_dir, clean, create);
	if (fd < 0)
		return fail(e, "%s", errno == ELOOP ? "Remote workspace path must not contain symbolic links"
				     : create     ? "Remote workspace directory cannot be created"
						  : "Remote workspace does not exist");
	if (sbx_fd_path(fd, shown, size) != 0)
		snprintf(shown, size, "%s/remote-workspaces/%s", g_server.cfg.data_dir, clean);
	return fd;
}
