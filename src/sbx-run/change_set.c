/* change_set.c — the upper layer against the run's first scan. */
#include "change_set.h"
#include "upper_walk.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ctx {
	const struct sbx_snap_scan *before;
	int ws;
	json_t *changes, *skipped;
	char **upper;   /* every path the upper layer holds */
	size_t n_upper, cap_upper;
	char **opaque;  /* opaque directories that were directories before */
	size_t n_opaque, cap_opaque;
	uint64_t bytes, max_bytes;
};

int change_set_digest(int fd, char out[65])
{
	char buf[65536];
	struct sbx_sha256 *h = sbx_sha256_new();
	if (!h)
		return errno = ENOMEM, -1;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			sbx_sha256_free(h);
			return errno = err, -1;
		}
		if (n == 0)
			break;
		sbx_sha256_update(h, buf, (size_t)n);
	}
	sbx_sha256_final(h, out);
	return 0;
}

static int push(char ***v, size_t *n, size_t *cap, const char *s)
{
	if (*n == *cap) {
		size_t grown = *cap ? *cap * 2 : 256;
		char **p = realloc(*v, grown * sizeof(*p));
		if (!p)
			return -1;
		*v = p;
		*cap = grown;
	}
	if (!((*v)[*n] = strdup(s)))
		return -1;
	++*n;
	return 0;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct sbx_snap_entry *)a)->path, ((const struct sbx_snap_entry *)b)->path);
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const struct sbx_snap_entry *before_at(const struct ctx *c, const char *path)
{
	struct sbx_snap_entry key = { .path = (char *)path };
	return c->before->len ? bsearch(&key, c->before->v, c->before->len, sizeof(key), by_path) : NULL;
}

static const char *type_name(char type)
{
	return type == SBX_ENTRY_DIR ? "dir" : type == SBX_ENTRY_SYMLINK ? "symlink" : "file";
}

static json_t *deleted(const struct sbx_snap_entry *b)
{
	json_t *j = json_pack("{s:s,s:s,s:s}", "path", b->path, "change", "deleted", "type", type_name(b->type));
	if (b->type == SBX_ENTRY_FILE)
		json_object_set_new(j, "size", json_integer((json_int_t)b->size));
	return j;
}

/* The first entry of the scan at or after path (sorted by strcmp). */
static size_t lower_bound(const struct ctx *c, const char *path)
{
	size_t lo = 0, hi = c->before->len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(c->before->v[mid].path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Every entry the scan had below path ("path/..."); with keep_upper, not
 * those the upper layer holds itself (they are listed as its own). */
static int delete_below(struct ctx *c, const char *path, bool keep_upper)
{
	size_t n = strlen(path);
	char *prefix = malloc(n + 2);
	if (!prefix)
		return -1;
	memcpy(prefix, path, n);
	memcpy(prefix + n, "/", 2);
	for (size_t i = lower_bound(c, prefix); i < c->before->len && !strncmp(c->before->v[i].path, prefix, n + 1); i++) {
		const char *p = c->before->v[i].path;
		if (keep_upper && c->n_upper && bsearch(&p, c->upper, c->n_upper, sizeof(char *), by_string))
			continue;
		json_array_append_new(c->changes, deleted(&c->before->v[i]));
	}
	free(prefix);
	return 0;
}

/* A change of what the scan had at x's path (b, or NULL: created). */
static json_t *change_of(const struct upper_entry *x, const struct sbx_snap_entry *b, const char *type)
{
	const char *what = !b ? "created" : strcmp(type_name(b->type), type) ? "typeChanged" : "modified";
	json_t *j = json_pack("{s:s,s:s,s:s}", "path", x->path, "change", what, "type", type);
	if (b && strcmp(what, "modified"))
		json_object_set_new(j, "previous", json_pack("{s:s}", "type", type_name(b->type)));
	return j;
}

static int file_change(struct ctx *c, const struct upper_entry *x, const struct sbx_snap_entry *b, json_t **out,
		       struct sbx_error *e)
{
	char hex[65];
	int fd = openat(x->parent, x->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && c->max_bytes && (uint64_t)st.st_size > c->max_bytes - c->bytes) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "quota-exceeded",
			      "the speculative run's changes: its files hold more than the %llu bytes the workspace quota "
			      "leaves (each name of a hard link counts: a commit copies it)",
			      (unsigned long long)c->max_bytes);
		close(fd);
		return -1;
	}
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_ino != x->st->st_ino || change_set_digest(fd, hex) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "upper-unreadable", "the speculative run's changes: %.600s: %s", x->path,
			      strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	json_t *j = change_of(x, b, "file");
	json_object_set_new(j, "size", json_integer((json_int_t)st.st_size));
	json_object_set_new(j, "sha256", json_string(hex));
	json_object_set_new(j, "executable", json_boolean(st.st_mode & S_IXUSR));
	c->bytes += (uint64_t)st.st_size;
	if (b && b->type == SBX_ENTRY_FILE) {
		/* The workspace's own copy, read as the scan saw it. */
		int old = sbx_open_beneath(c->ws, x->path, O_RDONLY | O_NONBLOCK | O_NOCTTY, SBX_BENEATH_NO_SYMLINKS);
		json_t *prev = json_pack("{s:I}", "size", (json_int_t)b->size);
		if (old >= 0 && fstat(old, &st) == 0 && S_ISREG(st.st_mode) && change_set_digest(old, hex) == 0)
			json_object_set_new(prev, "sha256", json_string(hex));
		if (old >= 0)
			close(old);
		json_object_set_new(j, "previous", prev);
	}
	*out = j;
	return 0;
}

static int visit(void *arg, const struct upper_entry *x, struct sbx_error *e)
{
	struct ctx *c = arg;
	const struct sbx_snap_entry *b = before_at(c, x->path);
	json_t *j = NULL;
	if (push(&c->upper, &c->n_upper, &c->cap_upper, x->path) != 0)
		goto oom;
	switch (x->kind) {
	case UPPER_WHITEOUT:
		if (!b)
			return 0; /* nothing below hid there */
		j = deleted(b);
		break;
	case UPPER_DIR:
		if (b && b->type == SBX_ENTRY_DIR && x->opaque &&
		    push(&c->opaque, &c->n_opaque, &c->cap_opaque, x->path) != 0)
			goto oom;
		if (!b || b->type != SBX_ENTRY_DIR)
			j = change_of(x, b, "dir");
		break;
	case UPPER_FILE:
		if (file_change(c, x, b, &j, e) != 0)
			return -1;
		break;
	case UPPER_SYMLINK: {
		char target[PATH_MAX];
		ssize_t n = readlinkat(x->parent, x->name, target, sizeof(target) - 1);
		if (n < 0) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "upper-unreadable", "the speculative run's changes: %.600s: %s",
				      x->path, strerror(errno));
			return -1;
		}
		target[n] = '\0';
		j = change_of(x, b, "symlink");
		json_object_set_new(j, "target", sbx_json_stringn_lossy(target, (size_t)n));
		break;
	}
	case UPPER_OTHER:
		json_array_append_new(c->skipped, json_pack("{s:s,s:s,s:s}", "path", x->path, "type",
							    upper_kind_name(x->kind, x->st), "reason",
							    "only files, directories and symlinks are committed"));
		return 0;
	}
	if (j)
		json_array_append_new(c->changes, j);
	/* A directory the run replaced took all it held with it. */
	if (b && b->type == SBX_ENTRY_DIR && x->kind != UPPER_DIR && delete_below(c, x->path, false) != 0)
		goto oom;
	return 0;
oom:
	sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "the speculative run's changes: out of memory");
	return -1;
}

static int by_change_path(const void *a, const void *b)
{
	const char *pa = json_string_value(json_object_get(*(json_t *const *)a, "path"));
	const char *pb = json_string_value(json_object_get(*(json_t *const *)b, "path"));
	return strcmp(pa ? pa : "", pb ? pb : "");
}

/* Sorted by path, each path once (a deletion a whiteout and an opaque
 * directory both imply is one deletion). */
static json_t *sorted(json_t *changes)
{
	size_t n = json_array_size(changes);
	json_t **v = n ? malloc(n * sizeof(*v)) : NULL;
	json_t *out = json_array();
	if (!v)
		return out;
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(changes, i);
	qsort(v, n, sizeof(*v), by_change_path);
	for (size_t i = 0; i < n; i++)
		if (!i || by_change_path(&v[i - 1], &v[i]) != 0)
			json_array_append(out, v[i]);
	free(v);
	return out;
}

static void count(json_t *counts, const char *key)
{
	json_object_set_new(counts, key, json_integer(json_integer_value(json_object_get(counts, key)) + 1));
}

json_t *change_set_read(int upper, const char *xattr_ns, const struct sbx_snap_scan *before, int ws,
			uint64_t max_bytes, struct sbx_error *e)
{
	struct ctx c = { .before = before, .ws = ws, .changes = json_array(), .skipped = json_array(),
			 .max_bytes = max_bytes };
	json_t *out = NULL;
	if (upper_walk(upper, xattr_ns, visit, &c, e) == 0) {
		qsort(c.upper, c.n_upper, sizeof(char *), by_string);
		for (size_t i = 0; i < c.n_opaque; i++)
			delete_below(&c, c.opaque[i], true);
		json_t *changes = sorted(c.changes);
		json_t *counts = json_pack("{s:i,s:i,s:i,s:i,s:I}", "created", 0, "modified", 0, "deleted", 0, "typeChanged",
					   0, "skipped", (json_int_t)json_array_size(c.skipped));
		size_t i;
		json_t *v;
		json_array_foreach(changes, i, v)
			count(counts, json_string_value(json_object_get(v, "change")));
		out = json_pack("{s:o,s:O,s:o,s:I}", "changes", changes, "skipped", c.skipped, "counts", counts, "bytes",
				(json_int_t)c.bytes);
	}
	for (size_t i = 0; i < c.n_upper; i++)
		free(c.upper[i]);
	for (size_t i = 0; i < c.n_opaque; i++)
		free(c.opaque[i]);
	free(c.upper);
	free(c.opaque);
	json_decref(c.changes);
	json_decref(c.skipped);
	return out;
}
