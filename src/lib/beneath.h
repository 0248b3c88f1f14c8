/* beneath.h — the one way a host path becomes an fd: resolved below a root
 * directory fd, never through a symlink or "..", never outside the root. */
#ifndef SBX_BENEATH_H
#define SBX_BENEATH_H

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* How a path below the root may be resolved. */
enum sbx_beneath_mode {
	SBX_BENEATH_NO_SYMLINKS, /* no symlink at any level (writes, binds, chowns) */
	SBX_BENEATH_IN_ROOT,     /* symlinks followed while they stay below (reads) */
};

/* Opens rel ("" or "." for the root itself) below rootfd with flags
 * (O_CLOEXEC added):
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS [| RESOLVE_NO_SYMLINKS])
 * where the kernel has it, else a walk of O_NOFOLLOW opens one component
 * at a time (IN_ROOT then refuses symlinks too). rel must be plain: no
 * leading '/', no empty, "." or ".." segment. -1 with errno: ELOOP for a
 * symlink, EXDEV for an escape, EINVAL for a rel that is not plain. */
int sbx_open_beneath(int rootfd, const char *rel, int flags, enum sbx_beneath_mode mode);

/* The rest of path below root_path (spelled as given or as its realpath),
 * with repeated and trailing slashes dropped, into rel; -1 when path does
 * not start with either spelling at a component boundary. Pure string
 * work on the caller's side; only sbx_open_beneath may then open rel. */
int sbx_path_below(const char *root_path, const char *path, char *rel, size_t size);

/* The directory name (one component) below dirfd, created 0755 when asked
 * and missing; never a symlink (ELOOP). Its O_RDONLY fd, or -1. */
int sbx_beneath_step(int dirfd, const char *name, bool create);
/* The directory holding rel below rootfd, opened with no symlink and
 * nothing outside rootfd on the way (sbx_open_beneath NO_SYMLINKS; missing
 * directories created 0755 by an O_NOFOLLOW walk when create); its
 * O_RDONLY fd (a dup of rootfd when rel has one component), with the
 * last component in *leaf (a pointer into rel).
 * -1 with errno ELOOP on a symlink (EXDEV, ENOTDIR for other refusals). */
int sbx_beneath_parent(int rootfd, const char *rel, bool create, const char **leaf);

/* The fallback alone (kernels without openat2): every component opened
 * O_NOFOLLOW from the previous one, so any symlink is refused (ELOOP). */
int sbx_open_beneath_walk(int rootfd, const char *rel, int flags);

/* The kernel's current name of an fd (display only: never use it to open). */
int sbx_fd_path(int fd, char *out, size_t size);

/* True when a and b are the same inode (fstat of both). */
bool sbx_same_file(int a, int b);

/* A directory fd of its own for dirfd's directory (a walk's reads then do
 * not move dirfd's offset), its stat in *st; -1 with errno on failure. */
int sbx_reopen_dir(int dirfd, struct stat *st);

#endif
