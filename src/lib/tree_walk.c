/* tree_walk.c — the fd-relative walk behind the usage walk, the snapshot
 * scan, the ownership walks and tree removal: getdents64 into one buffer
 * per depth, no path strings and no allocation per entry. */
#include "tree_walk.h"
#include "beneath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A listing buffer per depth; deep chains, few names each, get small ones. */
#define DENTS_BUF(depth) ((depth) < 16 ? 32 * 1024 : 4096)
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static int fail(struct sbx_walk *w, const struct sbx_walk_entry *x, enum sbx_walk_op op, int err)
{
	return w->error ? w->error(w, x, op, err) : SBX_WALK_GO;
}

static int walk_dir(struct sbx_walk *w, const struct sbx_walk_entry *dir);

/* A bind mount of the same filesystem keeps its st_dev; the kernel marks
 * the root of every mount instead. Such a directory is not this tree's. */
static bool mount_root(int fd)
{
	struct statx sx;
	return statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &sx) == 0 &&
	       (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* One name below x->parent. A DT_DIR is opened straight away and stat'ed
 * by its fd; anything else (or a DT_DIR swapped for a file or a symlink
 * since the listing) is stat'ed first and opened only when a directory.
 * A directory on another filesystem, or the root of any mount, is skipped. */
static int visit(struct sbx_walk *w, struct sbx_walk_entry *x, struct stat *st, unsigned char type)
{
	x->fd = type == DT_DIR ? openat(x->parent, x->name, DIR_FLAGS) : -1;
	if (x->fd < 0 && type == DT_DIR && errno != ENOTDIR && errno != ELOOP)
		return fail(w, x, SBX_WALK_OPEN, errno);
	if (x->fd < 0) {
		if (fstatat(x->parent, x->name, st, AT_SYMLINK_NOFOLLOW) != 0)
			return fail(w, x, SBX_WALK_STAT, errno);
		if (st->st_dev != w->dev) /* a file mounted here: not this tree's */
			return SBX_WALK_GO;
		if (!S_ISDIR(st->st_mode))
			return w->entry(w, x);
		if ((x->fd = openat(x->parent, x->name, DIR_FLAGS)) < 0)
			return fail(w, x, SBX_WALK_OPEN, errno);
	}
	/* A mount point is skipped; a directory too deep is closed unentered. */
	int rc = SBX_WALK_SKIP;
	bool deep = x->depth > w->max_depth;
	if (fstat(x->fd, st) == 0 && st->st_dev == w->dev && !mount_root(x->fd) &&
	    (rc = w->entry(w, x)) == SBX_WALK_GO && !deep) {
		w->levels[x->depth].name = x->name;
		rc = walk_dir(w, x);
	}
	close(x->fd);
	x->fd = -1;
	if (rc != SBX_WALK_GO)
		return rc == SBX_WALK_STOP ? rc : SBX_WALK_GO;
	sbx_walk_fn then = deep ? w->too_deep : w->leave;
	return then ? then(w, x) : SBX_WALK_GO;
}

static int walk_dir(struct sbx_walk *w, const struct sbx_walk_entry *dir)
{
	char *buf = w->levels[dir->depth].buf;
	if (!buf && !(buf = w->levels[dir->depth].buf = malloc(DENTS_BUF(dir->depth))))
		return fail(w, dir, SBX_WALK_LIST, ENOMEM);
	for (;;) {
		long n = syscall(SYS_getdents64, dir->fd, buf, DENTS_BUF(dir->depth));
		if (n <= 0)
			return n == 0 ? SBX_WALK_GO : fail(w, dir, SBX_WALK_LIST, errno);
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			off += d->d_reclen;
			const char *name = d->d_name;
			if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
				continue;
			/* Every name counts, even one that vanishes or cannot be
			 * stat'ed: the cap bounds the walk itself. */
			if (++w->names > w->max_names && w->max_names) {
				w->capped = true;
				return SBX_WALK_STOP;
			}
			struct stat st;
			struct sbx_walk_entry x = { .parent = dir->fd, .name = name, .depth = dir->depth + 1, .st = &st };
			if (visit(w, &x, &st, d->d_type) == SBX_WALK_STOP)
				return SBX_WALK_STOP;
		}
	}
}

int sbx_walk_run(struct sbx_walk *w, int rootfd)
{
	struct stat st;
	/* A description of its own: the listing does not move rootfd's offset. */
	int fd = sbx_reopen_dir(rootfd, &st);
	if (fd < 0)
		return -1;
	size_t levels = (size_t)(w->max_depth > 0 ? w->max_depth : 0) + 1;
	int rc = -1;
	if ((w->levels = calloc(levels, sizeof(*w->levels)))) {
		struct sbx_walk_entry root = { .parent = -1, .name = "", .fd = fd, .st = &st };
		w->names = 0;
		w->capped = false;
		w->dev = st.st_dev;
		rc = walk_dir(w, &root) == SBX_WALK_STOP;
	}
	for (size_t i = 0; w->levels && i < levels; i++)
		free(w->levels[i].buf);
	free(w->levels);
	w->levels = NULL;
	close(fd);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

int sbx_walk_path(const struct sbx_walk *w, const struct sbx_walk_entry *x, char *buf, size_t size)
{
	size_t n = 0;
	if (!size)
		return errno = ENAMETOOLONG, -1;
	buf[0] = '\0';
	for (int i = 1; i <= x->depth; i++) {
		const char *name = i < x->depth ? w->levels[i].name : x->name;
		size_t len = strlen(name), sep = i > 1;
		if (n + sep + len >= size) {
			snprintf(buf + n, size - n, "%s%s", sep ? "/" : "", name);
			return errno = ENAMETOOLONG, -1;
		}
		if (sep)
			buf[n++] = '/';
		memcpy(buf + n, name, len + 1);
		n += len;
	}
	return (int)n;
}
