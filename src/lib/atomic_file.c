/* atomic_file.c — temp + fsync + rename + fsync(dir) (the fsyncs only when
 * durable), by path or below a directory fd, and mkdir -p. */
#include "atomic_file.h"
#include "exitcodes.h"
#include "io.h"
#include "uuid.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* name below dirfd replaced by buf through "<name>.tmp.XXXXXX" (O_EXCL on
 * a random name: nobody can pre-create or swap it); shown names errors. */
static int replace_at(int dirfd, const char *name, const char *shown, const void *buf, size_t len,
		      mode_t mode, bool durable, struct sbx_error *e)
{
	char tmp[NAME_MAX + 1], uuid[40];
	int fd = -1;

	for (int tries = 0; fd < 0 && tries < 8; tries++) {
		sbx_uuid4("", uuid, sizeof(uuid));
		if (snprintf(tmp, sizeof(tmp), "%s.tmp.%.8s", name, uuid) >= (int)sizeof(tmp)) {
			sbx_error_set(e, SBX_EXIT_USAGE, "path-too-long", "%.200s: name too long", shown);
			return -1;
		}
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "write-failed", "%s: cannot create a temporary file: %s",
			      shown, strerror(errno));
		return -1;
	}
	if (fchmod(fd, mode) != 0 || sbx_write_all(fd, buf, len) != 0 || (durable && fsync(fd) != 0)) {
		int err = errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "write-failed", "%s: cannot write: %s", shown, strerror(err));
		return -1;
	}
	if (close(fd) != 0 || renameat(dirfd, tmp, dirfd, name) != 0) {
		int err = errno;
		unlinkat(dirfd, tmp, 0);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "write-failed", "%s: cannot replace: %s", shown, strerror(err));
		return -1;
	}
	if (durable && fsync(dirfd) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "write-failed", "%s: cannot sync its directory: %s", shown,
			      strerror(errno));
		return -1;
	}
	return 0;
}

/* The directory of path and its last component (a pointer into path). */
static const char *split_dir(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, size, ".");
	else if (slash == path)
		snprintf(dir, size, "/");
	else
		snprintf(dir, size, "%.*s", (int)(slash - path), path);
	return slash ? slash + 1 : path;
}

int sbx_atomic_write(const char *path, const void *buf, size_t len, mode_t mode,
		     struct sbx_error *e)
{
	return sbx_atomic_replace(path, buf, len, mode, true, e);
}

int sbx_atomic_write_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode,
			struct sbx_error *e)
{
	return replace_at(dirfd, name, name, buf, len, mode, true, e);
}

int sbx_atomic_replace(const char *path, const void *buf, size_t len, mode_t mode, bool durable,
		       struct sbx_error *e)
{
	char dir[PATH_MAX];

	if (strlen(path) + 16 >= PATH_MAX) {
		sbx_error_set(e, SBX_EXIT_USAGE, "path-too-long", "%.200s: path too long", path);
		return -1;
	}
	const char *name = split_dir(path, dir, sizeof(dir));
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "write-failed", "%s: cannot create a temporary file: %s",
			      path, strerror(errno));
		return -1;
	}
	int rc = replace_at(dirfd, name, path, buf, len, mode, durable, e);
	close(dirfd);
	return rc;
}

int sbx_mkdir_p(const char *path, mode_t mode, struct sbx_error *e)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "directory path is empty or too long");
		return -1;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		/* Parents are made searchable; only the last component gets mode. */
		if (mkdir(buf, saved == '\0' ? mode : 0755) != 0 && errno != EEXIST) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "mkdir-failed", "%s: cannot create directory: %s",
				      buf, strerror(errno));
			return -1;
		}
		*p = saved;
		if (saved == '\0')
			break;
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "mkdir-failed", "%s: not a directory", path);
		return -1;
	}
	return 0;
}
