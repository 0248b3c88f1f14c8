/* snap_scan.c — the sorted workspace scan, a visitor of tree_walk.c, and
 * the fingerprint diff. */
#include "snap_scan.h"
#include "exitcodes.h"
#include "io.h"
#include "json.h"
#include "tree_walk.h"
#include "workspace_owner.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct scan {
	struct sbx_snap_scan *s;
	struct sbx_error *e;
	char path[PATH_MAX];
};

static struct sbx_snap_entry *add(struct scan *w, const struct stat *st, char type)
{
	if (w->s->len == w->s->cap) {
		size_t cap = w->s->cap ? w->s->cap * 2 : 256;
		struct sbx_snap_entry *v = realloc(w->s->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		w->s->v = v;
		w->s->cap = cap;
	}
	struct sbx_snap_entry *x = &w->s->v[w->s->len];
	memset(x, 0, sizeof(*x));
	if (!(x->path = strdup(w->path)))
		return NULL;
	x->type = type;
	x->exec = (st->st_mode & S_IXUSR) != 0;
	x->size = type == SBX_ENTRY_DIR ? 0 : (uint64_t)st->st_size;
	x->dev = (uint64_t)st->st_dev;
	x->ino = (uint64_t)st->st_ino;
	x->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	x->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	w->s->len++;
	return x;
}

/* Any failure ends the scan, naming the path relative to the root. */
static int fail(struct sbx_walk *tw, const struct sbx_walk_entry *x, enum sbx_walk_op op, int err)
{
	struct scan *w = tw->ctx;
	if (op == SBX_WALK_STAT && err == ENOENT)
		return SBX_WALK_GO; /* vanished meanwhile */
	sbx_walk_path(tw, x, w->path, sizeof(w->path));
	sbx_error_set(w->e, err == ENOMEM ? SBX_EXIT_INTERNAL : SBX_EXIT_USAGE, "scan-failed",
		      "%.300s: %s", w->path[0] ? w->path : ".", strerror(err));
	return SBX_WALK_STOP;
}

static int too_deep(struct sbx_walk *tw, const struct sbx_walk_entry *x)
{
	struct scan *w = tw->ctx;
	sbx_walk_path(tw, x, w->path, sizeof(w->path));
	sbx_error_set(w->e, SBX_EXIT_USAGE, "workspace-too-deep",
		      "workspace: directories nested deeper than %d levels (below %.120s...)", SBX_WORKSPACE_MAX_DEPTH,
		      w->path);
	return SBX_WALK_STOP;
}

/* Files, directories and symlinks (with their targets); nothing else. */
static int entry(struct sbx_walk *tw, const struct sbx_walk_entry *x)
{
	struct scan *w = tw->ctx;
	char type = S_ISREG(x->st->st_mode) ? SBX_ENTRY_FILE : S_ISDIR(x->st->st_mode) ? SBX_ENTRY_DIR
		  : S_ISLNK(x->st->st_mode) ? SBX_ENTRY_SYMLINK : 0;
	char target[PATH_MAX];
	ssize_t n = type == SBX_ENTRY_SYMLINK ? readlinkat(x->parent, x->name, target, sizeof(target) - 1) : 0;
	if (!type || n < 0)
		return SBX_WALK_GO;
	target[n] = '\0';
	if (sbx_walk_path(tw, x, w->path, sizeof(w->path)) < 0)
		return fail(tw, x, SBX_WALK_OPEN, ENAMETOOLONG);
	struct sbx_snap_entry *y = add(w, x->st, type);
	if (!y || (type == SBX_ENTRY_SYMLINK && !(y->target = strdup(target))))
		return fail(tw, x, SBX_WALK_OPEN, ENOMEM);
	return SBX_WALK_GO;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct sbx_snap_entry *)a)->path, ((const struct sbx_snap_entry *)b)->path);
}

int sbx_snap_scan_at(int rootfd, struct sbx_snap_scan *s, struct sbx_error *e)
{
	struct scan w = { .s = s, .e = e };
	struct sbx_walk tw = { .max_depth = SBX_WORKSPACE_MAX_DEPTH, .ctx = &w, .entry = entry, .too_deep = too_deep,
			       .error = fail };

	memset(s, 0, sizeof(*s));
	int rc = sbx_walk_run(&tw, rootfd);
	if (rc < 0)
		sbx_error_set(e, errno == ENOMEM ? SBX_EXIT_INTERNAL : SBX_EXIT_USAGE, "scan-failed", ".: %s",
			      strerror(errno));
	if (rc != 0) {
		sbx_snap_scan_free(s);
		return -1;
	}
	if (s->len > 1)
		qsort(s->v, s->len, sizeof(*s->v), by_path);
	return 0;
}

int sbx_snap_scan(const char *root, struct sbx_snap_scan *s, struct sbx_error *e)
{
	struct stat st;
	int fd = sbx_open_walk_root(root, &st, e);
	int rc = fd < 0 ? -1 : sbx_snap_scan_at(fd, s, e);
	if (fd < 0)
		memset(s, 0, sizeof(*s));
	else
		close(fd);
	return rc;
}

void sbx_snap_scan_free(struct sbx_snap_scan *s)
{
	for (size_t i = 0; i < s->len; i++) {
		free(s->v[i].path);
		free(s->v[i].target);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* Modified, as upstream reports it: the size or the mtime changed (or the
 * name now holds another file). Not the ctime: an ownership or mode change
 * the runner makes itself (the pre-run chown) is no modification. */
static bool changed(const struct sbx_snap_entry *a, const struct sbx_snap_entry *b)
{
	return a->size != b->size || a->mtime_ns != b->mtime_ns || a->ino != b->ino;
}

void sbx_snap_fingerprint_diff(const struct sbx_snap_scan *before, const struct sbx_snap_scan *after,
			       json_t *created, json_t *modified, json_t *deleted)
{
	size_t i = 0, j = 0;
	while (i < before->len || j < after->len) {
		const struct sbx_snap_entry *a = i < before->len ? &before->v[i] : NULL;
		const struct sbx_snap_entry *b = j < after->len ? &after->v[j] : NULL;
		if (!a && !b)
			break; /* the loop condition rules this out; said for the analyzer */
		int cmp = !a ? 1 : !b ? -1 : strcmp(a->path, b->path);
		if (cmp < 0) {
			if (a->type == SBX_ENTRY_FILE)
				json_array_append_new(deleted, sbx_json_string_lossy(a->path));
			i++;
		} else if (cmp > 0) {
			if (b->type == SBX_ENTRY_FILE)
				json_array_append_new(created, sbx_json_string_lossy(b->path));
			j++;
		} else {
			if (b->type == SBX_ENTRY_FILE && a->type != SBX_ENTRY_FILE)
				json_array_append_new(created, sbx_json_string_lossy(b->path));
			else if (a->type == SBX_ENTRY_FILE && b->type != SBX_ENTRY_FILE)
				json_array_append_new(deleted, sbx_json_string_lossy(a->path));
			else if (a->type == SBX_ENTRY_FILE && changed(a, b))
				json_array_append_new(modified, sbx_json_string_lossy(b->path));
			i++;
			j++;
		}
	}
}
