/* tree_remove.c — depth-first removal with openat(O_NOFOLLOW) and unlinkat. */
#include "tree_remove.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
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

int sbx_remove_tree(const char *path)
{
	char copy[PATH_MAX], copy2[PATH_MAX];
	if (snprintf(copy, sizeof(copy), "%s", path) >= (int)sizeof(copy))
		return errno = ENAMETOOLONG, -1;
	strcpy(copy2, copy);
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = remove_at(fd, basename(copy2), 0);
	int saved = errno;
	close(fd);
	errno = saved;
	return rc;
}
