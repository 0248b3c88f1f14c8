/* tree_remove.c — depth-first removal with openat(O_NOFOLLOW) and unlinkat,
 * from a parent opened with no symlink on the way. */
#include "tree_remove.h"
#include "path.h"
#include "remote_path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEPTH 256

static int remove_at(int at, const char *name, int depth)
{
	if (unlinkat(at, name, 0) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (depth > MAX_DEPTH)
		return errno = ELOOP, -1;
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (remove_at(dirfd(d), de->d_name, depth + 1) != 0 && errno != ENOENT)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(at, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

int sbx_remove_tree_at(int dirfd, const char *name)
{
	return remove_at(dirfd, name, 0);
}

int sbx_remove_tree_beneath(int rootfd, const char *rel)
{
	const char *leaf;
	if (!sbx_path_plain_relative(rel))
		return errno = EINVAL, -1;
	int parent = sbx_beneath_parent(rootfd, rel, false, &leaf);
	if (parent < 0)
		return -1;
	int rc = remove_at(parent, leaf, 0);
	int saved = errno;
	close(parent);
	errno = saved;
	return rc;
}

int sbx_remove_tree(const char *path)
{
	/* "/a//b/" is "a/b" below "/". */
	char rel[PATH_MAX];
	if (sbx_path_fold_slashes(path, rel, sizeof(rel)) != 0)
		return -1;
	int root = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -1;
	int rc = sbx_remove_tree_beneath(root, rel);
	int saved = errno;
	close(root);
	errno = saved;
	return rc;
}
