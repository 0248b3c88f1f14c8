/* apply.c — a pending change staged in its workspace, then moved into place. */
#include "apply.h"
#include "upper_walk.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/tree_remove.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

struct action {
	char *path;
	enum upper_kind kind;
	bool opaque;
	mode_t mode;      /* permission bits only */
};

struct ctx {
	int stage;        /* the staging directory, in ws's root */
	uid_t uid;
	gid_t gid;
	bool chown;       /* as root: everything becomes the workspace owner's */
	struct action *v;
	size_t len, cap;
	struct apply_counts *n;
	json_t *skipped;
};

static int failed(struct sbx_error *e, const char *path, const char *what)
{
	sbx_error_set(e, errno == ENOSPC || errno == EDQUOT ? SBX_EXIT_RESOURCE : SBX_EXIT_INTERNAL, "commit-failed",
		      "commit: %.600s: %s: %s", path, what, strerror(errno));
	return -1;
}

static int copy_fd(int in, int out)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return (int)n;
		if (sbx_write_all(out, buf, (size_t)n) != 0)
			return -1;
	}
}

/* A file's content and times into the staging directory as slot. */
static int stage_file(struct ctx *c, const struct upper_entry *x, const char *slot, struct sbx_error *e)
{
	int in = openat(x->parent, x->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (in < 0 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != x->st->st_ino) {
		if (in >= 0)
			close(in);
		if (in >= 0)
			errno = ESTALE;
		return failed(e, x->path, "read");
	}
	int out = openat(c->stage, slot, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct timespec times[2] = { st.st_atim, st.st_mtim };
	int rc = out >= 0 && copy_fd(in, out) == 0 && (!c->chown || fchown(out, c->uid, c->gid) == 0) &&
			 fchmod(out, st.st_mode & 0777) == 0 && futimens(out, times) == 0
		 ? 0
		 : failed(e, x->path, "copy");
	if (out >= 0)
		close(out);
	close(in);
	c->n->bytes += (uint64_t)st.st_size;
	return rc;
}

static int stage_symlink(struct ctx *c, const struct upper_entry *x, const char *slot, struct sbx_error *e)
{
	char target[PATH_MAX];
	ssize_t len = readlinkat(x->parent, x->name, target, sizeof(target) - 1);
	if (len < 0)
		return failed(e, x->path, "readlink");
	target[len] = '\0';
	if (symlinkat(target, c->stage, slot) != 0 ||
	    (c->chown && fchownat(c->stage, slot, c->uid, c->gid, AT_SYMLINK_NOFOLLOW) != 0))
		return failed(e, x->path, "symlink");
	return 0;
}

static int visit(void *arg, const struct upper_entry *x, struct sbx_error *e)
{
	struct ctx *c = arg;
	char slot[32];
	if (x->kind == UPPER_OTHER) {
		c->n->skipped++;
		json_array_append_new(c->skipped, json_pack("{s:s,s:s,s:s}", "path", x->path, "type",
							    upper_kind_name(x->kind, x->st), "reason",
							    "only files, directories and symlinks are committed"));
		return 0;
	}
	if (c->len == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct action *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return errno = ENOMEM, failed(e, x->path, "list");
		c->v = v;
		c->cap = cap;
	}
	struct action *a = &c->v[c->len];
	snprintf(slot, sizeof(slot), "%zu", c->len);
	*a = (struct action){ .path = strdup(x->path), .kind = x->kind, .opaque = x->opaque, .mode = x->st->st_mode & 0777 };
	if (!a->path)
		return errno = ENOMEM, failed(e, x->path, "list");
	c->len++;
	if (x->kind == UPPER_FILE)
		return stage_file(c, x, slot, e);
	if (x->kind == UPPER_SYMLINK)
		return stage_symlink(c, x, slot, e);
	return 0;
}

/* Everything a directory holds goes; the directory stays. */
static int empty_dir(int dir)
{
	int fd = dup(dir);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int rc = 0;
	for (struct dirent *de; (de = readdir(d));) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (sbx_remove_tree_at(dir, de->d_name) != 0 && errno != ENOENT)
			rc = -1;
	}
	closedir(d);
	return rc;
}

static int place_dir(struct ctx *c, int parent, const char *leaf, const struct action *a)
{
	struct stat st;
	if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
	    sbx_remove_tree_at(parent, leaf) != 0)
		return -1;
	if (mkdirat(parent, leaf, 0700) != 0 && errno != EEXIST)
		return -1;
	int fd = openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc = fd >= 0 && (!a->opaque || empty_dir(fd) == 0) && (!c->chown || fchown(fd, c->uid, c->gid) == 0) &&
			 fchmod(fd, a->mode) == 0
		 ? 0
		 : -1;
	if (fd >= 0)
		close(fd);
	c->n->dirs++;
	return rc;
}

static int place(struct ctx *c, int ws, size_t i, struct sbx_error *e)
{
	const struct action *a = &c->v[i];
	const char *leaf;
	char slot[32];
	struct stat st;
	int parent = sbx_beneath_parent(ws, a->path, false, &leaf);
	if (parent < 0)
		return failed(e, a->path, "its directory in the workspace");
	int rc = 0;
	snprintf(slot, sizeof(slot), "%zu", i);
	switch (a->kind) {
	case UPPER_WHITEOUT:
		if (sbx_remove_tree_at(parent, leaf) == 0)
			c->n->removed++;
		else if (errno != ENOENT)
			rc = -1;
		break;
	case UPPER_DIR:
		rc = place_dir(c, parent, leaf, a);
		break;
	case UPPER_FILE:
	case UPPER_SYMLINK:
		/* A rename replaces a file or a symlink, never a directory. */
		if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
		    sbx_remove_tree_at(parent, leaf) != 0)
			rc = -1;
		else if (renameat(c->stage, slot, parent, leaf) != 0)
			rc = -1;
		else if (a->kind == UPPER_FILE)
			c->n->files++;
		else
			c->n->symlinks++;
		break;
	case UPPER_OTHER:
		break;
	}
	close(parent);
	return rc == 0 ? 0 : failed(e, a->path, "apply");
}

/* .sbx-commit-<random>: a name the change itself does not use. */
static int make_stage(int ws, int upper, char *name, size_t size)
{
	for (int tries = 0; tries < 16; tries++) {
		unsigned char r[8];
		if (getrandom(r, sizeof(r), 0) != sizeof(r))
			return -1;
		snprintf(name, size, ".sbx-commit-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5],
			 r[6], r[7]);
		struct stat st;
		if (fstatat(upper, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		if (mkdirat(ws, name, 0700) == 0)
			return openat(ws, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (errno != EEXIST)
			return -1;
	}
	return errno = EEXIST, -1;
}

int apply_change(int upper, const char *xattrs, int ws, struct apply_counts *n, json_t *skipped, struct sbx_error *e)
{
	struct stat root;
	char stage_name[64];
	memset(n, 0, sizeof(*n));
	if (fstat(ws, &root) != 0)
		return failed(e, ".", "stat");
	struct ctx c = { .uid = root.st_uid, .gid = root.st_gid, .chown = geteuid() == 0, .n = n, .skipped = skipped };
	if ((c.stage = make_stage(ws, upper, stage_name, sizeof(stage_name))) < 0)
		return failed(e, ".sbx-commit-*", "a staging directory");
	/* 1. Everything staged: a failure here leaves the workspace as it was. */
	int rc = upper_walk(upper, xattrs, visit, &c, e);
	/* 2. Moved into place, parents before what they hold. */
	for (size_t i = 0; rc == 0 && i < c.len; i++)
		rc = place(&c, ws, i, e);
	close(c.stage);
	sbx_remove_tree_at(ws, stage_name);
	for (size_t i = 0; i < c.len; i++)
		free(c.v[i].path);
	free(c.v);
	return rc;
}
