/* remote_path.c — key and path grammars, and the no-symlink parent: one
 * openat2 (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the kernel has it,
 * else (or to create directories) a walk opening each directory with
 * O_DIRECTORY | O_NOFOLLOW from the previous one: the same guarantee. */
#include "remote_path.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool segments_ok(const char *s, bool strict_chars)
{
	if (!*s || *s == '/' || strchr(s, '\\'))
		return false;
	const char *p = s;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (strict_chars) {
			for (size_t i = 0; i < n; i++) {
				char c = p[i];
				if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
				      c == '.' || c == '_' || c == '-'))
					return false;
			}
		}
		p += n;
		if (*p == '/' && !*++p)
			return false; /* a trailing '/' is an empty segment */
	}
	return true;
}

static bool trimmed_into(const char *raw, char *out, size_t size, size_t max)
{
	char *t = raw ? sbx_trim_dup(raw, strlen(raw)) : NULL;
	bool ok = t && strlen(t) <= max && strlen(t) < size;
	if (ok)
		strcpy(out, t);
	free(t);
	return ok;
}

bool sbx_remote_key(const char *raw, char *out, size_t size)
{
	return trimmed_into(raw, out, size, SBX_REMOTE_KEY_MAX) && segments_ok(out, true);
}

bool sbx_remote_rel_path(const char *raw, char *out, size_t size)
{
	if (!trimmed_into(raw, out, size, SBX_REMOTE_PATH_MAX) || !segments_ok(out, false))
		return false;
	for (const char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20)
			return false;
	return true;
}

/* The next directory below dirfd, created when asked; never a symlink. */
static int step(int dirfd, const char *name, bool create)
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

/* openat2 where the kernel has it: the parent in one call, no symlink and
 * nothing outside rootfd on the way. -2 when the walk must do it (no
 * openat2, or a directory to create). */
static int parent_by_openat2(int rootfd, const char *rel, bool create)
{
	const char *slash = strrchr(rel, '/');
	if (!slash)
		return fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	char dir[4096];
	if ((size_t)(slash - rel) >= sizeof(dir))
		return errno = ENAMETOOLONG, -1;
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = '\0';
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	int fd = (int)syscall(SYS_openat2, rootfd, dir, &how, sizeof(how));
	if (fd >= 0)
		return fd;
	if (errno == ENOSYS || (errno == ENOENT && create))
		return -2;
	return -1;
}

int sbx_beneath_parent(int rootfd, const char *rel, bool create, const char **leaf)
{
	int direct = parent_by_openat2(rootfd, rel, create);
	if (direct != -2) {
		const char *slash = strrchr(rel, '/');
		*leaf = slash ? slash + 1 : rel;
		return direct;
	}
	int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	const char *p = rel;
	char name[256];
	for (;;) {
		size_t n = strcspn(p, "/");
		if (!p[n]) {
			*leaf = p;
			return fd;
		}
		if (n >= sizeof(name)) {
			close(fd);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		int next = step(fd, name, create);
		int saved = errno;
		close(fd);
		if (next < 0) {
			errno = saved;
			return -1;
		}
		fd = next;
		p += n + 1;
	}
}

int sbx_remote_workspace_dir(const char *data_dir, const char *key, bool create, char *out, size_t size)
{
	char root[4096];
	struct stat st;
	if (snprintf(root, sizeof(root), "%s/remote-workspaces", data_dir) >= (int)sizeof(root))
		return errno = ENAMETOOLONG, -1;
	if (create && mkdir(root, 0755) != 0 && errno != EEXIST)
		return -1;
	if (lstat(root, &st) != 0)
		return -1;
	if (!S_ISDIR(st.st_mode))
		return errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR, -1;
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0)
		return -1;
	/* Every component, the last included, is a real directory. */
	char with_slash[SBX_REMOTE_KEY_MAX + 8];
	snprintf(with_slash, sizeof(with_slash), "%s/x", key);
	const char *leaf;
	int fd = sbx_beneath_parent(rootfd, with_slash, create, &leaf);
	int saved = errno;
	close(rootfd);
	if (fd < 0)
		return errno = saved, -1;
	close(fd);
	if (snprintf(out, size, "%s/%s", root, key) >= (int)size)
		return errno = ENAMETOOLONG, -1;
	return 0;
}
