/* io.c — capped reads and complete writes. */
#include "io.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *sbx_read_fd_capped(int fd, size_t cap, size_t *len, const char *what,
			 struct sbx_error *e)
{
	size_t size = 0, alloc = 4096;
	char *buf = malloc(alloc);

	if (!buf) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "%s: out of memory", what);
		return NULL;
	}
	for (;;) {
		if (alloc - size < 2) {
			size_t next = alloc * 2;
			if (next > cap + 2)
				next = cap + 2;
			char *grown = realloc(buf, next);
			if (!grown) {
				free(buf);
				sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "%s: out of memory", what);
				return NULL;
			}
			buf = grown;
			alloc = next;
		}
		ssize_t n = read(fd, buf + size, alloc - size - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			free(buf);
			sbx_error_set(e, SBX_EXIT_USAGE, "read-failed", "%s: cannot read: %s", what, strerror(err));
			return NULL;
		}
		if (n == 0)
			break;
		size += (size_t)n;
		if (size > cap) {
			free(buf);
			sbx_error_set(e, SBX_EXIT_USAGE, "input-too-large",
				      "%s: input exceeds the limit of %zu bytes", what, cap);
			return NULL;
		}
	}
	buf[size] = '\0';
	if (len)
		*len = size;
	return buf;
}

char *sbx_read_file_capped(const char *path, size_t cap, size_t *len,
			   struct sbx_error *e)
{
	if (strcmp(path, "-") == 0)
		return sbx_read_fd_capped(STDIN_FILENO, cap, len, "stdin", e);

	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "open-failed", "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = sbx_read_fd_capped(fd, cap, len, path, e);
	close(fd);
	return buf;
}

int sbx_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The walk root held as a directory fd; name is for messages. */
static int open_walk_root_at(int rootfd, const char *name, struct stat *st, struct sbx_error *e)
{
	int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, st) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%.300s: %s", name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int sbx_open_walk_root(const char *root, struct stat *st, struct sbx_error *e)
{
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%.300s: %s", root, strerror(errno));
		return -1;
	}
	int listable = open_walk_root_at(fd, root, st, e);
	close(fd);
	return listable;
}

int sbx_process_start_time(pid_t pid, char *out, size_t size)
{
	char path[64];
	struct sbx_error e;
	size_t len;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	char *st = pid > 0 ? sbx_read_file_capped(path, 4096, &len, &e) : NULL;
	/* Fields are counted after the command name, which may hold spaces. */
	const char *p = st ? strrchr(st, ')') : NULL;
	for (int field = 2; p && *p; p++)
		if (*p == ' ' && ++field == 22) {
			snprintf(out, size, "%.*s", (int)strcspn(p + 1, " "), p + 1);
			break;
		}
	free(st);
	return out[0] ? 0 : -1;
}
