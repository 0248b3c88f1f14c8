/* host_dir.c — "fd:N" or a path, to a directory fd and a display name. */
#include "host_dir.h"
#include "beneath.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool sbx_host_dir_fd_ref(const char *value, int *fd)
{
	if (!value || strncmp(value, "fd:", 3) != 0)
		return false;
	char *end;
	errno = 0;
	long n = strtol(value + 3, &end, 10);
	if (errno || end == value + 3 || *end || n < 3 || n > 65535)
		return false;
	*fd = (int)n;
	return true;
}

/* Takes fd (owned) into d when it is a directory. */
static int adopt(int fd, const char *value, const char *field, struct sbx_host_dir *d, struct sbx_error *e)
{
	struct stat st;
	char name[PATH_MAX];
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%s: %.300s is not a directory", field, value);
		close(fd);
		return -1;
	}
	d->fd = fd;
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	d->path = strdup(sbx_fd_path(fd, name, sizeof(name)) == 0 ? name : value);
	if (!d->path) {
		sbx_host_dir_close(d);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "%s", field);
		return -1;
	}
	return 0;
}

int sbx_host_dir_open(const char *value, const char *field, struct sbx_host_dir *d, struct sbx_error *e)
{
	int inherited, fd;
	*d = SBX_HOST_DIR_NONE;
	if (sbx_host_dir_fd_ref(value, &inherited)) {
		/* Above every slot a launch hands on (3..31), so no dup2 clobbers it. */
		if ((fd = fcntl(inherited, F_DUPFD_CLOEXEC, 32)) < 0) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%s: %s: no such open descriptor", field, value);
			return -1;
		}
		return adopt(fd, value, field, d, e);
	}
	if (!value || value[0] != '/') {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%s: must be an absolute path or fd:N", field);
		return -1;
	}
	if ((fd = open(value, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (fd < 32 && (fd = fcntl(fd, F_DUPFD_CLOEXEC, 32)) < 0)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%s: %.300s: %s", field, value,
			      errno == ENOTDIR ? "is not a directory" : strerror(errno));
		return -1;
	}
	return adopt(fd, value, field, d, e);
}

int sbx_host_dir_beneath(const struct sbx_host_dir *parent, const char *rel, const char *field,
			 struct sbx_host_dir *d, struct sbx_error *e)
{
	*d = SBX_HOST_DIR_NONE;
	int fd = sbx_open_beneath(parent->fd, rel, O_PATH | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
	if (fd >= 0 && fd < 32) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 32);
		close(fd);
		fd = high;
	}
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%s: %.300s: %s", field, rel,
			      errno == ELOOP ? "a symbolic link on the path (refused)"
			      : errno == EINVAL || errno == EXDEV ? "must stay inside without '.' or '..'"
			      : errno == ENOTDIR ? "is not a directory" : strerror(errno));
		return -1;
	}
	return adopt(fd, rel, field, d, e);
}

void sbx_host_dir_close(struct sbx_host_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	*d = SBX_HOST_DIR_NONE;
}
