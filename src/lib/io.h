/* io.h — capped reads and complete writes; every read of untrusted data
 * goes through a cap so no input can grow a buffer without bound. */
#ifndef SBX_IO_H
#define SBX_IO_H

#include "error.h"

#include <stddef.h>
#include <sys/types.h>

/* Reads fd to EOF. Fails (bad-input, naming `what`) when more than cap
 * bytes arrive. The result is NUL-terminated; free() it. */
char *sbx_read_fd_capped(int fd, size_t cap, size_t *len, const char *what,
			 struct sbx_error *e);
/* Same for a path; "-" means stdin. */
char *sbx_read_file_capped(const char *path, size_t cap, size_t *len,
			   struct sbx_error *e);
/* Writes all of buf, retrying on EINTR and short writes. 0 or -1/errno. */
int sbx_write_all(int fd, const void *buf, size_t len);

#endif
