/* tree_walk.h — the one walk of an untrusted tree, by directory fds, with a
 * visitor: the rules that keep a hostile tree from steering it live here. */
#ifndef SBX_TREE_WALK_H
#define SBX_TREE_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* What a callback returns: go on; for a directory's entry, do not enter it;
 * end the whole walk. */
enum { SBX_WALK_GO = 0, SBX_WALK_SKIP, SBX_WALK_STOP };
/* What failed: the entry's fstatat, its openat, or listing a directory
 * (ENOMEM: no listing buffer). */
enum sbx_walk_op { SBX_WALK_STAT, SBX_WALK_OPEN, SBX_WALK_LIST };

struct sbx_walk_entry {
	int parent;            /* the directory fd it is listed in (-1: the root) */
	const char *name;      /* its name there ("" for the root) */
	int depth;             /* the root's children: 1 */
	int fd;                /* a directory: the walk's own fd for it; else -1 */
	const struct stat *st; /* its lstat (a directory: fstat of fd) */
};

struct sbx_walk;
typedef int (*sbx_walk_fn)(struct sbx_walk *w, const struct sbx_walk_entry *x);

/* The caller sets max_depth, the callbacks it needs (entry at least) and
 * ctx; the walk, the rest. Entries are listed with getdents64 relative to
 * their directory's fd, stat'ed with AT_SYMLINK_NOFOLLOW relative to it,
 * and only on the root's filesystem (others, mount points, are skipped);
 * a directory is entered only by openat(O_RDONLY | O_DIRECTORY |
 * O_NOFOLLOW), one fd per level. */
struct sbx_walk {
	int max_depth;       /* directories at depth <= this are entered */
	uint64_t max_names;  /* end the walk past this many names (0: no cap) */
	void *ctx;
	sbx_walk_fn entry;    /* each entry, pre-order; SKIP leaves a directory unentered */
	sbx_walk_fn leave;    /* a directory once its entries are done (optional) */
	sbx_walk_fn too_deep; /* a directory deeper than max_depth, its fd closed (optional) */
	int (*error)(struct sbx_walk *w, const struct sbx_walk_entry *x, enum sbx_walk_op op, int err); /* optional */
	/* The walk's. */
	uint64_t names;      /* names seen, each one that vanished or failed too */
	bool capped;         /* max_names ended the walk */
	dev_t dev;           /* the root's filesystem */
	struct sbx_walk_level {
		char *buf;        /* its getdents buffer, reused */
		const char *name; /* the name of the directory entered there */
	} *levels;
};

/* Walks below rootfd (a directory fd, O_PATH too, left open and where it
 * was). 0: walked; 1: a callback or max_names ended it; -1 with errno when
 * the root cannot be listed. */
int sbx_walk_run(struct sbx_walk *w, int rootfd);

/* x's path relative to the root, built now, '/'-separated ("" for the
 * root); its length, or -1 (ENAMETOOLONG) when only a prefix fit. */
int sbx_walk_path(const struct sbx_walk *w, const struct sbx_walk_entry *x, char *buf, size_t size);

#endif
