/* tree_remove.c — depth-first removal with openat(O_NOFOLLOW) and unlinkat,
 * from a parent opened with no symlink on the way; subtrees deeper than a
 * few dozen levels are renamed up and removed in later passes. */
#include "tree_remove.h"
#include "path.h"
#include "beneath.h"
#include "clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <inttypes.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deeper than this below the directory being removed, a subdirectory is
 * renamed up into it and removed in a later pass: any depth is removed
 * with at most this many fds open. */
#define HOIST_DEPTH 64

struct removal {
	int top;            /* the directory being removed: hoisted subtrees go here */
	uint64_t tag;       /* random: a tree cannot hold the hoisted names in advance */
	unsigned long next; /* for the hoisted names */
	unsigned long hoisted;
};

static int remove_children(struct removal *rm, int dirfd, int depth);

/* A directory about to go, opened and made ours (0700): a supervisor
 * without dac_override (sbx-run) may then empty it and move it, however
 * the workload that made it set its owner and mode. */
static int open_owned(int at, const char *name)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && (st.st_uid != geteuid() || (st.st_mode & 0700) != 0700)) {
		/* Best effort: where this fails, the removal fails by itself. */
		if (st.st_uid == geteuid() || fchown(fd, geteuid(), (gid_t)-1) == 0)
			(void)!fchmod(fd, 0700);
	}
	return fd;
}

/* The directory an entry goes from, made ours when we may not write it
 * (only a supervisor without dac_override ever needs this). */
static void own_parent(int at)
{
	int fd = openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && (st.st_uid == geteuid() || fchown(fd, geteuid(), (gid_t)-1) == 0))
		(void)!fchmod(fd, (st.st_mode & 07777) | 0700);
	if (fd >= 0)
		close(fd);
}

/* unlinkat(at, name, 0), retried once as the owner of at on EACCES. */
static int unlink_entry(int at, const char *name)
{
	if (unlinkat(at, name, 0) == 0)
		return 0;
	if (errno != EACCES)
		return -1;
	own_parent(at);
	return unlinkat(at, name, 0);
}

static int remove_entry(struct removal *rm, int at, const char *name, int depth)
{
	if (unlink_entry(at, name) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	int fd = open_owned(at, name);
	if (fd < 0)
		return -1;
	if (depth >= HOIST_DEPTH) {
		close(fd);
		char hoisted[48];
		for (int tries = 0; tries < 64; tries++) {
			snprintf(hoisted, sizeof(hoisted), ".sbx-hoisted-%016" PRIx64 "-%lu", rm->tag, rm->next++);
			if (renameat2(at, name, rm->top, hoisted, RENAME_NOREPLACE) == 0) {
				rm->hoisted++;
				return 0;
			}
			if (errno != EEXIST)
				return -1;
		}
		return -1;
	}
	int rc = remove_children(rm, fd, depth + 1);
	close(fd);
	if (unlinkat(at, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

static int remove_children(struct removal *rm, int dirfd, int depth)
{
	int listfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = listfd >= 0 ? fdopendir(listfd) : NULL;
	if (!d) {
		if (listfd >= 0)
			close(listfd);
		return -1;
	}
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (remove_entry(rm, dirfd, de->d_name, depth) != 0 && errno != ENOENT)
			rc = -1;
	}
	closedir(d);
	return rc;
}

static int remove_at(int at, const char *name)
{
	if (unlink_entry(at, name) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	struct removal rm = { .top = open_owned(at, name) };
	if (rm.top < 0)
		return -1;
	if (getrandom(&rm.tag, sizeof(rm.tag), 0) != (ssize_t)sizeof(rm.tag))
		rm.tag = (uint64_t)sbx_mono_ms() ^ ((uint64_t)getpid() << 32);
	/* Each pass removes what lies within HOIST_DEPTH and lifts what is
	 * deeper into the top: a pass that lifted nothing was the last. */
	int rc;
	unsigned long before;
	do {
		before = rm.hoisted;
		rc = remove_children(&rm, rm.top, 1);
	} while (rc == 0 && rm.hoisted != before);
	close(rm.top);
	if (rc == 0 && unlinkat(at, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

int sbx_remove_tree_at(int dirfd, const char *name)
{
	return remove_at(dirfd, name);
}

int sbx_remove_tree_beneath(int rootfd, const char *rel)
{
	const char *leaf;
	if (!sbx_path_plain_relative(rel))
		return errno = EINVAL, -1;
	int parent = sbx_beneath_parent(rootfd, rel, false, &leaf);
	if (parent < 0)
		return -1;
	int rc = remove_at(parent, leaf);
	int saved = errno;
	close(parent);
	errno = saved;
	return rc;
}

int sbx_remove_tree(const char *path)
{
	/* "/a//b/" is "a/b" below "/". */
	char rel[PATH_MAX];
	if (sbx_path_fold_slashes(path, rel, sizeof(rel)) != 0)
		return -1;
	int root = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -1;
	int rc = sbx_remove_tree_beneath(root, rel);
	int saved = errno;
	close(root);
	errno = saved;
	return rc;
}
