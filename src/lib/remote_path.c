/* remote_path.c — key and path grammars, the no-symlink parent (one
 * sbx_open_beneath(NO_SYMLINKS); to create directories, a walk opening each
 * with O_DIRECTORY | O_NOFOLLOW from the previous one: the same guarantee),
 * and remote workspaces opened, and removed, through it. */
#include "remote_path.h"
#include "beneath.h"
#include "text.h"
#include "tree_remove.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int sbx_beneath_parent(int rootfd, const char *rel, bool create, const char **leaf)
{
	const char *slash = strrchr(rel, '/');
	char dir[SBX_REMOTE_PATH_MAX + 1];
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
		int next = step(fd, name, create);
		int saved = errno;
		close(fd);
		fd = next;
		errno = saved;
		p += n + 1;
	}
	return fd;
}

/* <data>/remote-workspaces, a real directory (made when create). */
static int workspaces_root(const char *data_dir, bool create)
{
	int data = open(data_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (data < 0)
		return -1;
	int fd = step(data, "remote-workspaces", create);
	int saved = errno;
	close(data);
	errno = saved;
	return fd;
}

int sbx_remote_workspace_open(const char *data_dir, const char *key, bool create)
{
	char with_slash[SBX_REMOTE_KEY_MAX + 8];
	const char *leaf;
	if (snprintf(with_slash, sizeof(with_slash), "%s/x", key) >= (int)sizeof(with_slash))
		return errno = ENAMETOOLONG, -1;
	int root = workspaces_root(data_dir, create);
	if (root < 0)
		return -1;
	/* Every component, the last included, is a real directory. */
	int fd = sbx_beneath_parent(root, with_slash, create, &leaf);
	int saved = errno;
	close(root);
	errno = saved;
	return fd;
}

int sbx_remote_workspace_remove(const char *data_dir, const char *key)
{
	int root = workspaces_root(data_dir, false);
	if (root < 0)
		return -1;
	int rc = sbx_remove_tree_beneath(root, key);
	int saved = errno;
	close(root);
	errno = saved;
	return rc;
}
