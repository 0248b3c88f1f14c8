/* beneath.h — the one way a host path becomes an fd: resolved below a root
 * directory fd, never through a symlink or "..", never outside the root. */
#ifndef SBX_BENEATH_H
#define SBX_BENEATH_H
#undef sbx_open_beneath /* io.h's two-argument spelling */

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

/* How a path below the root may be resolved. */
enum sbx_beneath_mode {
	SBX_BENEATH_NO_SYMLINKS, /* no symlink at any level (writes, binds, chowns) */
	SBX_BENEATH_IN_ROOT,     /* symlinks followed while they stay below (reads) */
};

/* Opens rel ("" or "." for the root itself) below rootfd with flags
 * (O_CLOEXEC and, for the last component, O_NOFOLLOW are added):
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS [| RESOLVE_NO_SYMLINKS])
 * where the kernel has it, else a walk of O_NOFOLLOW opens one component
 * at a time (IN_ROOT then refuses symlinks too). rel must be plain: no
 * leading '/', no empty, "." or ".." segment. -1 with errno: ELOOP for a
 * symlink, EXDEV for an escape, EINVAL for a rel that is not plain. */
int sbx_open_beneath(int rootfd, const char *rel, int flags, enum sbx_beneath_mode mode);

/* An absolute host path the caller named, taken below root_path (a
 * directory the runner trusts, opened as it is): the path must spell
 * root_path, or its realpath, as a prefix; the rest is opened with
 * sbx_open_beneath(NO_SYMLINKS) as an O_PATH directory. The root itself
 * is refused unless allow_root. Returns the fd, or -1 with e naming what. */
int sbx_open_dir_under(const char *root_path, const char *path, bool allow_root, const char *what,
		       struct sbx_error *e);

/* The kernel's current name of an fd (display only: never use it to open). */
int sbx_fd_path(int fd, char *out, size_t size);

/* True when a and b are the same inode (fstat of both). */
bool sbx_same_file(int a, int b);

#endif
