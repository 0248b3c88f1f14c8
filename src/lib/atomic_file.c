/* atomic_file.c — temp + fsync + rename + fsync(dir) (the fsyncs only when
 * durable), and mkdir -p. */
#include "atomic_file.h"
#include "exitcodes.h"
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void split_dir(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, size, ".");
	else if (slash == path)
		snprintf(dir, size, "/");
	else
		snprintf(dir, size, "%.*s", (int)(slash - path), path);
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

int sbx_atomic_write(const char *path, const void *buf, size_t len, mode_t mode,
		     struct sbx_error *e)
{
	return sbx_atomic_replace(path, buf, len, mode, true, e);
}

int sbx_atomic_replace(const char *path, const void *buf, size_t len, mode_t mode, bool durable,
		       struct sbx_error *e)
{
	char dir[PATH_MAX], tmp[PATH_MAX];
	int fd = -1;

	if (strlen(path) + 16 >= sizeof(tmp)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "path-too-long", "%.200s: path too long", path);
		return -1;
	}
	split_dir(path, dir, sizeof(dir));
	/* O_EXCL on a random name: nobody can pre-create or swap our temp file. */
	snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "write-failed", "%s: cannot create a temporary file: %s",
			      path, strerror(errno));
		return -1;
	}
	if (fchmod(fd, mode) != 0 || sbx_write_all(fd, buf, len) != 0 || (durable && fsync(fd) != 0)) {
		int err = errno;
		close(fd);
		unlink(tmp);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "write-failed", "%s: cannot write: %s", path, strerror(err));
		return -1;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		int err = errno;
		unlink(tmp);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "write-failed", "%s: cannot replace: %s", path, strerror(err));
		return -1;
	}
	if (durable && fsync_dir(dir) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "write-failed", "%s: cannot sync directory: %s", dir,
			      strerror(errno));
		return -1;
	}
	return 0;
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
