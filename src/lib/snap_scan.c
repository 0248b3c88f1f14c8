/* snap_scan.c — the sorted workspace walk and the fingerprint diff. */
#include "snap_scan.h"
#include "beneath.h"
#include "exitcodes.h"
#include "io.h"
#include "json.h"
#include "workspace_owner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


struct scan {
	struct sbx_snap_scan *s;
	dev_t dev;
	char path[PATH_MAX];
	struct sbx_error *e;
};

static struct sbx_snap_entry *add(struct scan *w, size_t plen, const struct stat *st, char type)
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
	if (!(x->path = strndup(w->path, plen)))
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

static int fail(struct scan *w, int err)
{
	sbx_error_set(w->e, err == ENOMEM ? SBX_EXIT_INTERNAL : SBX_EXIT_USAGE, "scan-failed",
		      "%.300s: %s", w->path[0] ? w->path : ".", strerror(err));
	return -1;
}

/* plen: length of the directory's relative path in w->path (0 at the root).
 * dirfd is the walk's to close: it becomes the listing's own, so a level
 * costs one fd (512 levels fit the usual 1024). */
static int walk(struct scan *w, int dirfd, size_t plen, int depth)
{
	if (depth > SBX_WORKSPACE_MAX_DEPTH) {
		close(dirfd);
		sbx_error_set(w->e, SBX_EXIT_USAGE, "workspace-too-deep",
			      "workspace: directories nested deeper than %d levels (below %.120s...)", SBX_WORKSPACE_MAX_DEPTH,
			      w->path);
		return -1;
	}
	DIR *d = fdopendir(dirfd);
	if (!d) {
		int err = errno;
		close(dirfd);
		return fail(w, err);
	}
	int rc = 0;
	for (struct dirent *de; rc == 0 && (de = readdir(d));) {
		const char *name = de->d_name;
		struct stat st;
		if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
			continue;
		size_t nlen = strlen(name), len = plen ? plen + 1 + nlen : nlen;
		if (len >= sizeof(w->path))
			return closedir(d), fail(w, ENAMETOOLONG);
		if (plen)
			w->path[plen] = '/';
		memcpy(w->path + (plen ? plen + 1 : 0), name, nlen + 1);
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue;
			rc = fail(w, errno);
			break;
		}
		if (st.st_dev != w->dev)
			continue; /* a mount point: not part of the workspace */
		struct sbx_snap_entry *x = NULL;
		if (S_ISREG(st.st_mode)) {
			x = add(w, len, &st, SBX_ENTRY_FILE);
		} else if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
			if (n < 0)
				continue;
			target[n] = '\0';
			if ((x = add(w, len, &st, SBX_ENTRY_SYMLINK)) && !(x->target = strdup(target)))
				x = NULL;
		} else if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				rc = fail(w, errno);
				break;
			}
			if ((x = add(w, len, &st, SBX_ENTRY_DIR)))
				rc = walk(w, sub, len, depth + 1);
			else
				close(sub);
		} else {
			continue;
		}
		if (!x && rc == 0)
			rc = fail(w, ENOMEM);
	}
	closedir(d);
	return rc;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct sbx_snap_entry *)a)->path, ((const struct sbx_snap_entry *)b)->path);
}

int sbx_snap_scan_at(int rootfd, struct sbx_snap_scan *s, struct sbx_error *e)
{
	struct scan *w = calloc(1, sizeof(*w));
	struct stat st;

	memset(s, 0, sizeof(*s));
	/* A description of its own: the walk's reads do not move rootfd's offset. */
	int fd = w ? sbx_reopen_dir(rootfd, &st) : -1;
	if (fd < 0) {
		sbx_error_set(e, w ? SBX_EXIT_USAGE : SBX_EXIT_INTERNAL, "scan-failed", ".: %s", strerror(w ? errno : ENOMEM));
		free(w);
		return -1;
	}
	w->s = s;
	w->dev = st.st_dev;
	w->e = e;
	int rc = walk(w, fd, 0, 0);
	free(w);
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
