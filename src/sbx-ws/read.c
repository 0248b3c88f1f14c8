/* read.c — cat: a file opened once below the key's fd (symlinks followed
 * only while they stay inside: the kernel refuses an escape; a FIFO or a
 * device opened without blocking and refused), then served: its fd handed
 * over a socket (sbx-httpd sends from it), or its bytes on stdout. */
#include "ws.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/fd_pass.h"
#include "../lib/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (256u << 10)

int ws_serve(const struct ws_opts *o, int fd, struct sbx_error *e)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "io", "cannot stat the file: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (o->fd_socket >= 0) {
		int rc = sbx_fd_send(o->fd_socket, fd);
		close(fd);
		if (rc != 0) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "fd-socket", "cannot hand the file over --fd-socket: %s",
				      strerror(errno));
			return -1;
		}
		printf("{\"size\":%lld}\n", (long long)st.st_size);
		return 0;
	}
	/* Bytes on stdout: no more than the size it had when opened. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	char *buf = malloc(COPY_CHUNK);
	long long left = st.st_size;
	ssize_t n = 1;
	while (buf && left > 0 && (n = read(fd, buf, left < COPY_CHUNK ? (size_t)left : COPY_CHUNK)) > 0) {
		if (sbx_write_all(STDOUT_FILENO, buf, (size_t)n) != 0) {
			n = -1;
			break;
		}
		left -= n;
	}
	free(buf);
	close(fd);
	if (!buf || n < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "io", "cannot copy the file to stdout: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int ws_cat(const struct ws_opts *o, const char *raw_key, const char *raw_path, struct sbx_error *e)
{
	char key[SBX_REMOTE_KEY_MAX + 1], rel[SBX_REMOTE_PATH_MAX + 1];
	int dir = ws_open(o->data, raw_key, true, key, e);
	if (dir < 0)
		return -1;
	if (!ws_rel_path(raw_path, rel, e)) {
		close(dir);
		return -1;
	}
	int fd = sbx_open_beneath(dir, rel, O_RDONLY | O_NONBLOCK, SBX_BENEATH_IN_ROOT);
	int saved = errno;
	close(dir);
	if (fd < 0) {
		if (saved == EXDEV)
			sbx_error_set(e, SBX_EXIT_USAGE, "escape", "Remote workspace path escapes the workspace: %s", rel);
		else if (saved == EAGAIN)
			sbx_error_set(e, SBX_EXIT_USAGE, WS_CODE_CHANGED, "Remote workspace path changed while it was opened: %s", rel);
		else
			sbx_error_set(e, SBX_EXIT_USAGE, "not-found", "Remote workspace file not found: %s", rel);
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		sbx_error_set(e, SBX_EXIT_USAGE, "not-regular", "Remote workspace path is not a regular file: %s", rel);
		return -1;
	}
	return ws_serve(o, fd, e);
}
