/* quota.c — the usage walk, a visitor of tree_walk.c: each inode charged
 * once (hard links by dev and inode); it stops at a byte or a name limit. */
#include "quota.h"
#include "exitcodes.h"
#include "io.h"
#include "map.h"
#include "tree_walk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 4095 /* directories deeper are counted, not entered */

struct walk {
	struct sbx_usage *u;
	uint64_t max_bytes;    /* stop the walk past this; 0: never */
	struct sbx_map links;  /* (dev, ino) of non-directories with several links */
	const char *root;
};

static int report(struct sbx_walk *tw, const struct sbx_walk_entry *x, int err)
{
	struct walk *w = tw->ctx;
	w->u->errors_total++;
	if (json_array_size(w->u->errors) >= SBX_QUOTA_MAX_ERRORS)
		return SBX_WALK_GO;
	/* Only now is a path string built. */
	char rel[8192], path[8300];
	sbx_walk_path(tw, x, rel, sizeof(rel));
	snprintf(path, sizeof(path), "%s%s%s", w->root, rel[0] ? "/" : "", rel);
	json_array_append_new(w->u->errors, json_pack("{s:s,s:s}", "path", path, "error", strerror(err)));
	return SBX_WALK_GO;
}

static int on_error(struct sbx_walk *tw, const struct sbx_walk_entry *x, enum sbx_walk_op op, int err)
{
	/* An entry that vanished meanwhile is no error. */
	return op == SBX_WALK_STAT && err == ENOENT ? SBX_WALK_GO : report(tw, x, err);
}

static int too_deep(struct sbx_walk *tw, const struct sbx_walk_entry *x)
{
	return report(tw, x, ELOOP);
}

/* What one inode costs: its allocation, or its apparent size where that is
 * larger (a sparse file, a symlink or directory the filesystem keeps
 * inline) — the bytes a copy or a snapshot of it would hold. */
static void charge(struct walk *w, const struct stat *st)
{
	uint64_t disk = (uint64_t)st->st_blocks * 512, size = st->st_size > 0 ? (uint64_t)st->st_size : 0;

	w->u->inodes++;
	w->u->disk_bytes += disk;
	w->u->charged_bytes += size > disk ? size : disk;
	if (w->max_bytes && w->u->charged_bytes > w->max_bytes)
		w->u->stopped = true;
}

/* A directory, or a non-directory counted once however many names it has. */
static int count(struct sbx_walk *tw, const struct sbx_walk_entry *x)
{
	struct walk *w = tw->ctx;
	const struct stat *st = x->st;
	if (x->fd >= 0) {
		w->u->dirs++;
		if ((unsigned)x->depth > w->u->max_depth)
			w->u->max_depth = (unsigned)x->depth;
	} else if (st->st_nlink > 1) {
		uint64_t key[2] = { (uint64_t)st->st_dev, (uint64_t)st->st_ino };
		bool seen = false;
		sbx_map_put(&w->links, key, sizeof(key), NULL, &seen);
		if (seen) {
			w->u->hardlinks_deduped++;
			return SBX_WALK_GO;
		}
	}
	if (S_ISREG(st->st_mode)) {
		w->u->files++;
		w->u->bytes += (uint64_t)st->st_size;
	} else if (S_ISLNK(st->st_mode)) {
		w->u->symlinks++;
	} else if (x->fd < 0) {
		w->u->other++;
	}
	charge(w, st);
	return w->u->stopped ? SBX_WALK_STOP : SBX_WALK_GO;
}

/* The walk below rootfd; display names the root in error paths. */
static int usage_at(int rootfd, const char *display, uint64_t max_bytes, uint64_t max_files, struct sbx_usage *u,
		    struct sbx_error *e)
{
	struct walk w = { .u = u, .max_bytes = max_bytes, .root = display };
	struct sbx_walk tw = { .max_depth = MAX_DEPTH, .max_names = max_files, .ctx = &w,
			       .entry = count, .too_deep = too_deep, .error = on_error };

	memset(u, 0, sizeof(*u));
	u->errors = json_array();
	sbx_map_init(&w.links);
	int rc = sbx_walk_run(&tw, rootfd);
	sbx_map_free(&w.links, NULL);
	if (rc < 0) {
		sbx_error_set(e, errno == ENOMEM ? SBX_EXIT_INTERNAL : SBX_EXIT_USAGE, "bad-path", "%.300s: %s", display,
			      strerror(errno));
		return -1;
	}
	u->entries = tw.names;
	u->stopped |= tw.capped;
	return 0;
}

int sbx_quota_usage_at(int rootfd, struct sbx_usage *u, struct sbx_error *e)
{
	return usage_at(rootfd, ".", 0, 0, u, e);
}

int sbx_quota_usage_capped_at(int rootfd, uint64_t max_bytes, uint64_t max_files, struct sbx_usage *u,
			      struct sbx_error *e)
{
	return usage_at(rootfd, ".", max_bytes, max_files, u, e);
}

int sbx_quota_usage(const char *root, struct sbx_usage *u, struct sbx_error *e)
{
	struct stat st;
	int fd = sbx_open_walk_root(root, &st, e);
	if (fd < 0) {
		memset(u, 0, sizeof(*u));
		u->errors = json_array();
		return -1;
	}
	int rc = usage_at(fd, root, 0, 0, u, e);
	close(fd);
	return rc;
}

json_t *sbx_usage_json(const struct sbx_usage *u)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:O,s:I}", "bytes", (json_int_t)u->bytes,
			 "diskBytes", (json_int_t)u->disk_bytes, "chargedBytes", (json_int_t)u->charged_bytes,
			 "inodes", (json_int_t)u->inodes, "entries", (json_int_t)u->entries,
			 "files", (json_int_t)u->files, "dirs", (json_int_t)u->dirs,
			 "symlinks", (json_int_t)u->symlinks, "other", (json_int_t)u->other,
			 "hardlinksDeduped", (json_int_t)u->hardlinks_deduped, "errors", u->errors,
			 "errorsTotal", (json_int_t)u->errors_total);
}

void sbx_usage_free(struct sbx_usage *u)
{
	json_decref(u->errors);
	u->errors = NULL;
}

void sbx_quota_message(bool during, uint64_t limit, char *out, size_t size)
{
	snprintf(out, size, "Workspace %s the %llu byte execution quota (current limit from system quota "
		 "settings / SCIENCE_AGENT_MAX_WORKSPACE_BYTES; set to 0 for unlimited)",
		 during ? "exceeded" : "exceeds", (unsigned long long)limit);
}

void sbx_quota_files_message(bool during, uint64_t limit, char *out, size_t size)
{
	snprintf(out, size, "Workspace %s the %llu file execution quota (every name counts: files, directories, "
		 "symlinks, each hard link; current limit from maxWorkspaceFiles / SCIENCE_AGENT_MAX_WORKSPACE_FILES; "
		 "set to 0 for unlimited)", during ? "exceeded" : "exceeds", (unsigned long long)limit);
}
