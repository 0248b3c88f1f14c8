/* io.h — capped reads and complete writes; every read of untrusted data
 * goes through a cap so no input can grow a buffer without bound. */
#ifndef SBX_IO_H
#define SBX_IO_H

#include "error.h"

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Reads fd to EOF. Fails (bad-input, naming `what`) when more than cap
 * bytes arrive. The result is NUL-terminated; free() it. */
char *sbx_read_fd_capped(int fd, size_t cap, size_t *len, const char *what,
			 struct sbx_error *e);
/* Same for a path; "-" means stdin. */
char *sbx_read_file_capped(const char *path, size_t cap, size_t *len,
			   struct sbx_error *e);
/* Opens a directory a walk starts from and stats it; -1 with an error
 * naming root (exit 2). */
int sbx_open_walk_root(const char *root, struct stat *st, struct sbx_error *e);
/* A process's start time (field 22 of /proc/<pid>/stat) as text, so a
 * recorded pid can be told from a later process that reuses it. */
int sbx_process_start_time(pid_t pid, char *out, size_t size);
/* Writes all of buf, retrying on EINTR and short writes. 0 or -1/errno. */
int sbx_write_all(int fd, const void *buf, size_t len);

#endif
