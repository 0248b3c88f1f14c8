/* tree_remove.c — depth-first removal, a visitor of tree_walk.c, from a
 * parent opened with no symlink on the way; subtrees deeper than a few
 * dozen levels are renamed up and removed in later passes. */
#include "tree_remove.h"
#include "path.h"
#include "beneath.h"
#include "clock.h"
#include "tree_walk.h"

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
	int rc, err;        /* -1 and the errno, once anything but a vanished entry failed */
	uint64_t tag;       /* random: a tree cannot hold the hoisted names in advance */
	unsigned long next; /* for the hoisted names */
	unsigned long hoisted;
};

/* A directory about to go, made ours (0700): a supervisor without
 * dac_override (sbx-run) may then empty it and move it, however the
 * workload that made it set its owner and mode. */
static void make_owned(int fd, const struct stat *st)
{
	if (st->st_uid != geteuid() || (st->st_mode & 0700) != 0700) {
		/* Best effort: where this fails, the removal fails by itself. */
		if (st->st_uid == geteuid() || fchown(fd, geteuid(), (gid_t)-1) == 0)
			(void)!fchmod(fd, 0700);
	}
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

static int failed(struct removal *rm, int rc)
{
	if (rc != 0 && errno != ENOENT && rm->rc == 0) {
		rm->rc = -1;
		rm->err = errno;
	}
	return SBX_WALK_GO;
}

/* A file goes at once; a directory is made ours, then emptied. */
static int remove_entry(struct sbx_walk *w, const struct sbx_walk_entry *x)
{
	if (x->fd >= 0) {
		make_owned(x->fd, x->st);
		return SBX_WALK_GO;
	}
	return failed(w->ctx, unlink_entry(x->parent, x->name));
}

static int remove_dir(struct sbx_walk *w, const struct sbx_walk_entry *x)
{
	return failed(w->ctx, unlinkat(x->parent, x->name, AT_REMOVEDIR));
}

/* Deeper than HOIST_DEPTH: renamed up into the top, for a later pass. */
static int hoist(struct sbx_walk *w, const struct sbx_walk_entry *x)
{
	struct removal *rm = w->ctx;
	char hoisted[48];
	for (int tries = 0; tries < 64; tries++) {
		snprintf(hoisted, sizeof(hoisted), ".sbx-hoisted-%016" PRIx64 "-%lu", rm->tag, rm->next++);
		if (renameat2(x->parent, x->name, rm->top, hoisted, RENAME_NOREPLACE) == 0) {
			rm->hoisted++;
			return SBX_WALK_GO;
		}
		if (errno != EEXIST)
			return failed(rm, -1);
	}
	return failed(rm, -1);
}

static int list_failed(struct sbx_walk *w, const struct sbx_walk_entry *x, enum sbx_walk_op op, int err)
{
	(void)x;
	(void)op;
	errno = err;
	return failed(w->ctx, -1);
}

static int remove_at(int at, const char *name)
{
	if (unlink_entry(at, name) == 0)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	struct removal rm = { .top = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) };
	struct sbx_walk w = { .max_depth = HOIST_DEPTH - 1, .ctx = &rm, .entry = remove_entry, .leave = remove_dir,
			      .too_deep = hoist, .error = list_failed };
	struct stat st;
	if (rm.top < 0)
		return -1;
	if (fstat(rm.top, &st) == 0)
		make_owned(rm.top, &st);
	if (getrandom(&rm.tag, sizeof(rm.tag), 0) != (ssize_t)sizeof(rm.tag))
		rm.tag = (uint64_t)sbx_mono_ms() ^ ((uint64_t)getpid() << 32);
	/* Each pass removes what lies within HOIST_DEPTH and lifts what is
	 * deeper into the top: a pass that lifted nothing was the last. */
	unsigned long before;
	do {
		before = rm.hoisted;
		if (sbx_walk_run(&w, rm.top) < 0)
			failed(&rm, -1);
	} while (rm.rc == 0 && rm.hoisted != before);
	close(rm.top);
	if (rm.rc == 0)
		failed(&rm, unlinkat(at, name, AT_REMOVEDIR));
	if (rm.rc)
		errno = rm.err;
	return rm.rc;
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
