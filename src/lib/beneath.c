/* beneath.c — openat2 below a root, or an O_NOFOLLOW walk where the kernel
 * lacks it, and the lexical split of a caller's absolute path into a
 * trusted root and a relative rest. */
#include "beneath.h"
#include "exitcodes.h"
#include "path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int by_openat2(int rootfd, const char *rel, int flags, enum sbx_beneath_mode mode)
{
	struct open_how how = { .flags = (unsigned long long)(flags | O_CLOEXEC),
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	if (mode == SBX_BENEATH_NO_SYMLINKS)
		how.resolve |= RESOLVE_NO_SYMLINKS;
	if (flags & O_CREAT)
		how.mode = 0600;
	return (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
}

/* One component at a time, each opened O_NOFOLLOW from the previous. */
int sbx_open_beneath_walk(int rootfd, const char *rel, int flags)
{
	int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	const char *p = rel;
	char name[NAME_MAX + 1];
	while (fd >= 0) {
		size_t n = strcspn(p, "/");
		bool last = !p[n];
		if (n > NAME_MAX) {
			close(fd);
			return errno = ENAMETOOLONG, -1;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		int next = openat(fd, name, last ? flags | O_NOFOLLOW | O_CLOEXEC : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
				  0600);
		int saved = errno;
		struct stat st;
		/* O_NOFOLLOW on a symlink reads as ELOOP or (O_DIRECTORY) ENOTDIR. */
		if (next < 0 && saved == ENOTDIR && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			saved = ELOOP;
		close(fd);
		if (next < 0)
			return errno = saved, -1;
		fd = next;
		if (last)
			break;
		p += n + 1;
	}
	struct stat st;
	if (fd >= 0 && (flags & O_PATH) && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
		close(fd); /* O_PATH | O_NOFOLLOW opened the symlink itself */
		return errno = ELOOP, -1;
	}
	return fd;
}

int sbx_open_beneath(int rootfd, const char *rel, int flags, enum sbx_beneath_mode mode)
{
	if (!rel[0] || !strcmp(rel, "."))
		return openat(rootfd, ".", (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_CLOEXEC);
	if (!sbx_path_plain_relative(rel))
		return errno = EINVAL, -1;
	int fd = by_openat2(rootfd, rel, flags, mode);
	if (fd >= 0 || errno != ENOSYS)
		return fd;
	return sbx_open_beneath_walk(rootfd, rel, flags);
}

int sbx_fd_path(int fd, char *out, size_t size)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, out, size - 1);
	if (n < 0 || (size_t)n >= size - 1)
		return -1;
	out[n] = '\0';
	return 0;
}

bool sbx_same_file(int a, int b)
{
	struct stat x, y;
	return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int sbx_reopen_dir(int dirfd, struct stat *st)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, st) != 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* The rest of path after prefix at a component boundary, or NULL. */
static const char *after_prefix(const char *prefix, const char *path)
{
	size_t n = strlen(prefix);
	while (n > 1 && prefix[n - 1] == '/')
		n--;
	if (strncmp(prefix, path, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return NULL;
	return path + n;
}

int sbx_path_below(const char *root_path, const char *path, char *rel, size_t size)
{
	char real_root[PATH_MAX];
	const char *rest = after_prefix(root_path, path);
	if (!rest && realpath(root_path, real_root))
		rest = after_prefix(real_root, path);
	if (!rest)
		return -1;
	/* "a//b/" means "a/b"; "." and ".." are left for sbx_open_beneath to refuse. */
	return sbx_path_fold_slashes(rest, rel, size);
}

int sbx_beneath_step(int dirfd, const char *name, bool create)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(dirfd, name, 0755) != 0 && errno != EEXIST)
			return -1;
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0 && errno == ENOTDIR) {
		struct stat st;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			errno = ELOOP;
	}
	return fd;
}

int sbx_beneath_parent(int rootfd, const char *rel, bool create, const char **leaf)
{
	const char *slash = strrchr(rel, '/');
	char dir[PATH_MAX];
	if (slash && (size_t)(slash - rel) >= sizeof(dir))
		return errno = ENAMETOOLONG, -1;
	if (slash) {
		memcpy(dir, rel, (size_t)(slash - rel));
		dir[slash - rel] = '\0';
	}
	/* The parent in one resolution; the walk below only creates. */
	int fd = slash ? sbx_open_beneath(rootfd, dir, O_RDONLY | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS)
		       : fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	*leaf = slash ? slash + 1 : rel;
	if (fd >= 0 || !create || errno != ENOENT)
		return fd;
	fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	for (const char *p = rel; fd >= 0 && p < *leaf;) {
		size_t n = strcspn(p, "/");
		char name[NAME_MAX + 1];
		if (n > NAME_MAX) {
			close(fd);
			return errno = ENAMETOOLONG, -1;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		int next = sbx_beneath_step(fd, name, create);
		int saved = errno;
		close(fd);
		fd = next;
		errno = saved;
		p += n + 1;
	}
	return fd;
}
