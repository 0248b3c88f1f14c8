/* host_dir.h — a host directory a spec or request names: "fd:N" (an
 * inherited descriptor, the way stages hand each other directories) or an
 * absolute path opened exactly once. Afterwards only the fd is used. */
#ifndef SBX_HOST_DIR_H
#define SBX_HOST_DIR_H

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

struct sbx_host_dir {
	int fd;     /* O_PATH or O_RDONLY directory fd (CLOEXEC); -1: absent */
	char *path; /* the kernel's name for it when opened: display only */
	dev_t dev;
	ino_t ino;
};

#define SBX_HOST_DIR_NONE ((struct sbx_host_dir){ .fd = -1 })

/* "fd:N" with N from 3 to 65535, or NULL. */
bool sbx_host_dir_fd_ref(const char *value, int *fd);
/* Opens value into d (the inherited fd is duplicated, not consumed); the
 * error names field. A path is opened with O_PATH | O_DIRECTORY, following
 * what the caller wrote once; a caller that must not follow a symlink
 * (sbx-httpd) resolves beneath its root itself and passes "fd:N". */
int sbx_host_dir_open(const char *value, const char *field, struct sbx_host_dir *d, struct sbx_error *e);
/* rel (plain, workspace-relative) below parent, no symlink at any level. */
int sbx_host_dir_beneath(const struct sbx_host_dir *parent, const char *rel, const char *field,
			 struct sbx_host_dir *d, struct sbx_error *e);
void sbx_host_dir_close(struct sbx_host_dir *d);

#endif
