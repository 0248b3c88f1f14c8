/* upper_walk.c — an overlay's upper layer, entry by entry, classified. */
#include "upper_walk.h"
#include "../lib/exitcodes.h"
#include "../lib/tree_walk.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

struct walk_ctx {
	const char *ns;
	upper_fn fn;
	void *ctx;
	struct sbx_error *e;
	uint64_t path_bytes;
	int failed;
};

/* An overlay mark on fd (or name below parent): 1 set, 0 not. */
static int mark(int parent, const char *name, int fd, const char *ns, const char *what)
{
	char key[64], value[8];
	snprintf(key, sizeof(key), "%s.overlay.%s", ns, what);
	ssize_t n;
	if (fd >= 0) {
		n = fgetxattr(fd, key, value, sizeof(value));
	} else {
		char at[PATH_MAX];
		/* A file's marks, read without opening it (lgetxattr by its
		 * /proc/self/fd path of the parent: never a symlink's target). */
		snprintf(at, sizeof(at), "/proc/self/fd/%d/%s", parent, name);
		n = lgetxattr(at, key, value, sizeof(value));
	}
	return n >= 0 || errno == ERANGE ? 1 : 0;
}

static int on_error(struct sbx_walk *w, const struct sbx_walk_entry *x, enum sbx_walk_op op, int err)
{
	struct walk_ctx *c = w->ctx;
	char path[PATH_MAX];
	sbx_walk_path(w, x, path, sizeof(path));
	static const char *const ops[] = { "stat", "open", "list" };
	sbx_error_set(c->e, SBX_EXIT_INTERNAL, "upper-unreadable", "the speculative run's changes: %.600s: %s: %s",
		      path[0] ? path : ".", ops[op], strerror(err));
	c->failed = 1;
	return SBX_WALK_STOP;
}

/* A mark the overlay is mounted without (userxattr: no redirects, no
 * metadata-only copies): upper/ does not hold that change whole. */
static int refused_mark(struct walk_ctx *c, const char *path, const char *code, const char *what)
{
	sbx_error_set(c->e, SBX_EXIT_INTEGRITY, code,
		      "the speculative run's changes: %.600s: %s (the overlay is mounted without them)", path, what);
	c->failed = 1;
	return SBX_WALK_STOP;
}

static int on_entry(struct sbx_walk *w, const struct sbx_walk_entry *x)
{
	struct walk_ctx *c = w->ctx;
	char path[PATH_MAX];
	if (sbx_walk_path(w, x, path, sizeof(path)) < 0) {
		sbx_error_set(c->e, SBX_EXIT_RESOURCE, "path-too-long", "the speculative run's changes: a path over %d bytes: %.200s...",
			      PATH_MAX, path);
		c->failed = 1;
		return SBX_WALK_STOP;
	}
	c->path_bytes += strlen(path) + 1;
	if (c->path_bytes > UPPER_MAX_PATH_BYTES) {
		sbx_error_set(c->e, SBX_EXIT_RESOURCE, "too-many-changes",
			      "the speculative run's changes: their paths hold more than %u bytes together",
			      UPPER_MAX_PATH_BYTES);
		c->failed = 1;
		return SBX_WALK_STOP;
	}
	const struct stat *st = x->st;
	struct upper_entry u = { .path = path, .parent = x->parent, .name = x->name, .fd = x->fd, .st = st };
	if (S_ISDIR(st->st_mode)) {
		u.kind = UPPER_DIR;
		u.opaque = mark(-1, NULL, x->fd, c->ns, "opaque") == 1;
		if (mark(-1, NULL, x->fd, c->ns, "redirect") == 1)
			return refused_mark(c, path, "overlay-redirect", "a redirected directory");
	} else if (S_ISREG(st->st_mode)) {
		u.kind = UPPER_FILE;
		if (mark(x->parent, x->name, -1, c->ns, "metacopy") == 1)
			return refused_mark(c, path, "overlay-metacopy", "a metadata-only copy");
	} else if (S_ISLNK(st->st_mode)) {
		u.kind = UPPER_SYMLINK;
	} else if (S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 && minor(st->st_rdev) == 0) {
		u.kind = UPPER_WHITEOUT;
	} else {
		u.kind = UPPER_OTHER;
	}
	if (c->fn(c->ctx, &u, c->e) != 0) {
		c->failed = 1;
		return SBX_WALK_STOP;
	}
	return SBX_WALK_GO;
}

static int on_too_deep(struct sbx_walk *w, const struct sbx_walk_entry *x)
{
	struct walk_ctx *c = w->ctx;
	(void)x;
	sbx_error_set(c->e, SBX_EXIT_RESOURCE, "workspace-too-deep",
		      "the speculative run's changes nest deeper than %d levels", UPPER_MAX_DEPTH);
	c->failed = 1;
	return SBX_WALK_STOP;
}

int upper_walk(int upper, const char *xattr_ns, upper_fn fn, void *ctx, struct sbx_error *e)
{
	struct walk_ctx c = { .ns = xattr_ns, .fn = fn, .ctx = ctx, .e = e };
	struct sbx_walk w = { .max_depth = UPPER_MAX_DEPTH, .max_names = UPPER_MAX_NAMES, .ctx = &c,
			      .entry = on_entry, .too_deep = on_too_deep, .error = on_error };
	int rc = sbx_walk_run(&w, upper);
	if (rc < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "upper-unreadable", "the speculative run's changes: %s", strerror(errno));
		return -1;
	}
	if (c.failed)
		return -1;
	if (w.capped) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "too-many-changes", "the speculative run's changes hold more than %u names",
			      UPPER_MAX_NAMES);
		return -1;
	}
	return 0;
}

const char *upper_kind_name(enum upper_kind kind, const struct stat *st)
{
	switch (kind) {
	case UPPER_WHITEOUT: return "whiteout";
	case UPPER_DIR: return "dir";
	case UPPER_FILE: return "file";
	case UPPER_SYMLINK: return "symlink";
	case UPPER_OTHER: break;
	}
	return S_ISFIFO(st->st_mode) ? "fifo" : S_ISSOCK(st->st_mode) ? "socket" : S_ISCHR(st->st_mode) ? "char-device"
	       : S_ISBLK(st->st_mode) ? "block-device" : "other";
}
