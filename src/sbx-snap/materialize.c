/* materialize.c — a manifest's entries created below one or more target
 * directories: parents opened without following symlinks, new entries
 * only (O_EXCL: never through or over what is there), file contents
 * cloned from the store's objects (FICLONE shares extents copy-on-write,
 * else copy_file_range, else read and write): a new inode every time,
 * never a link to an object a workload could then change. */
#include "snap.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/map.h"
#include "../lib/path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_BUF (256 * 1024)

/* A target's parent directory of the last entry, kept open: the manifest
 * is sorted, so a directory's entries mostly come together. */
struct cursor {
	char dir[PATH_MAX];
	int fd;
	bool owned;
};

struct run {
	const char *store;
	bool verify, try_clone;
	struct sbx_map verified;
	char *buf;
	struct materialized *m;
	struct sbx_error *e;
};

static void cursor_close(struct cursor *c)
{
	if (c->fd >= 0 && c->owned)
		close(c->fd);
	c->fd = -1;
	c->owned = false;
}

/* The directory holding path below root (the cursor's when the same). */
static int parent_of(int rootfd, struct cursor *c, const char *path, const char **leaf)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	*leaf = slash ? slash + 1 : path;
	if (c->fd >= 0 && strlen(c->dir) == len && !strncmp(c->dir, path, len))
		return c->fd;
	cursor_close(c);
	if (len >= sizeof(c->dir))
		return errno = ENAMETOOLONG, -1;
	memcpy(c->dir, path, len);
	c->dir[len] = '\0';
	if (!len) {
		c->fd = rootfd;
		return c->fd;
	}
	c->fd = sbx_open_beneath(rootfd, c->dir, O_RDONLY | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
	c->owned = c->fd >= 0;
	return c->fd;
}

static int fail(struct run *r, int code, const char *path, const char *why)
{
	sbx_error_set(r->e, code, code == SBX_EXIT_INTEGRITY ? "corrupt-object" : "restore-write", "%.300s: %s", path,
		      why);
	return -1;
}

/* The object's content against its digest, once per call (inline). */
static int verify_object(struct run *r, int in, const char *digest, const char *path)
{
	if (!r->verify || sbx_map_has(&r->verified, digest, strlen(digest)))
		return 0;
	int ok = snap_object_matches(in, digest, r->buf, COPY_BUF);
	if (ok != 1)
		return fail(r, ok == 0 ? SBX_EXIT_INTEGRITY : SBX_EXIT_INTERNAL, path,
			    ok == 0 ? "the stored content does not match its digest" : strerror(errno));
	sbx_map_put(&r->verified, digest, strlen(digest), NULL, NULL);
	return 0;
}

/* size bytes of in into out: a clone where the filesystem has them. */
static int clone_into(struct run *r, int out, int in, uint64_t size)
{
	if (!size)
		return 0;
	if (r->try_clone) {
		if (ioctl(out, FICLONE, in) == 0) {
			r->m->cloned++;
			return 0;
		}
		if (errno != EOPNOTSUPP && errno != ENOTTY && errno != EXDEV && errno != EINVAL && errno != ENOSYS)
			return -1;
		r->try_clone = false; /* this filesystem (or pair) has none */
	}
	loff_t off = 0;
	while ((uint64_t)off < size) {
		ssize_t n = copy_file_range(in, &off, out, NULL, size - (uint64_t)off, 0);
		if (n > 0)
			continue;
		if (n == 0)
			return errno = EIO, -1; /* shorter than it was */
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
			return -1;
		for (ssize_t k; (uint64_t)off < size; off += k) {
			size_t want = size - (uint64_t)off < COPY_BUF ? (size_t)(size - (uint64_t)off) : COPY_BUF;
			k = pread(in, r->buf, want, off);
			if (k <= 0 || sbx_write_all(out, r->buf, (size_t)k) != 0)
				return k == 0 ? (errno = EIO, -1) : -1;
		}
	}
	r->m->copied++;
	return 0;
}

static int make_file(struct run *r, const json_t *row, const char *path, const struct target *t, int *dirfds,
		     const char **leaves, size_t n)
{
	const char *digest = sbx_json_string_or(row, "digest", "");
	json_int_t size = json_integer_value(json_object_get(row, "size"));
	mode_t mode = sbx_json_bool_or(row, "exec", false) ? 0755 : 0644;
	char obj[PATH_MAX];
	struct stat st;
	if (!sbx_snap_valid_digest(digest) || size < 0 || sbx_snap_object_path(r->store, digest, obj, sizeof(obj)) != 0)
		return fail(r, SBX_EXIT_INTEGRITY, path, "bad file entry in the manifest");
	int in = open(obj, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (in >= 0)
			close(in);
		sbx_error_set(r->e, SBX_EXIT_INTEGRITY, "missing-object", "%.300s: object %s missing from the store", path,
			      digest);
		return -1;
	}
	if (st.st_size != (off_t)size) {
		close(in);
		return fail(r, SBX_EXIT_INTEGRITY, path, "the stored content does not match its digest (not its size)");
	}
	int rc = verify_object(r, in, digest, path);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int out = openat(dirfds[i], leaves[i], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		/* The umask must not eat the exec bit: fchmod sets the mode. */
		if (out < 0 || fchmod(out, mode) != 0 || clone_into(r, out, in, (uint64_t)size) != 0 ||
		    (t[i].chown && fchown(out, t[i].uid, t[i].gid) != 0))
			rc = fail(r, SBX_EXIT_INTERNAL, path, strerror(errno));
		if (out >= 0)
			close(out);
	}
	close(in);
	r->m->files++;
	r->m->bytes += (uint64_t)size;
	return rc;
}

static int make_entry(struct run *r, const json_t *row, const struct target *t, struct cursor *cur, size_t n)
{
	const char *type = sbx_json_string_or(row, "type", ""), *path = sbx_json_string_or(row, "path", "");
	int dirfds[FORK_MAX];
	const char *leaves[FORK_MAX];
	if (!sbx_path_plain_relative(path)) {
		sbx_error_set(r->e, SBX_EXIT_INTEGRITY, "bad-manifest", "unsafe path '%.200s' in the manifest", path);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if ((dirfds[i] = parent_of(t[i].fd, &cur[i], path, &leaves[i])) < 0) {
			sbx_error_set(r->e, SBX_EXIT_INTEGRITY, "bad-manifest", "%.300s: parent is not a directory: %s", path,
				      strerror(errno));
			return -1;
		}
	if (!strcmp(type, "file"))
		return make_file(r, row, path, t, dirfds, leaves, n);
	bool dir = !strcmp(type, "dir");
	if (!dir && strcmp(type, "symlink") != 0) {
		sbx_error_set(r->e, SBX_EXIT_INTEGRITY, "bad-manifest", "%.300s: unknown entry type '%.20s'", path, type);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		int rc = dir ? mkdirat(dirfds[i], leaves[i], 0755)
			     : symlinkat(sbx_json_string_or(row, "target", ""), dirfds[i], leaves[i]);
		if (rc != 0 ||
		    (t[i].chown && fchownat(dirfds[i], leaves[i], t[i].uid, t[i].gid, AT_SYMLINK_NOFOLLOW) != 0))
			return fail(r, SBX_EXIT_INTERNAL, path, strerror(errno));
	}
	if (dir)
		r->m->dirs++;
	else
		r->m->symlinks++;
	return 0;
}

int snap_materialize(const char *store, const json_t *entries, const struct target *t, size_t n, enum verify v,
		     struct materialized *m, struct sbx_error *e)
{
	struct run r = { .store = store, .verify = v == VERIFY_INLINE, .try_clone = true, .m = m, .e = e };
	struct cursor cur[FORK_MAX];
	if (n > FORK_MAX)
		return sbx_error_set(e, SBX_EXIT_USAGE, "too-many", "at most %d targets", FORK_MAX), -1;
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < n; i++)
		cur[i] = (struct cursor){ .fd = -1 };
	sbx_map_init(&r.verified);
	int rc = (r.buf = malloc(COPY_BUF)) ? 0 : -1;
	if (rc)
		sbx_error_set(e, SBX_EXIT_INTERNAL, "oom", "out of memory");
	size_t i;
	json_t *row;
	struct object_check *check = rc == 0 && v == VERIFY_BESIDE ? snap_check_start(store, entries) : NULL;
	json_array_foreach(entries, i, row) {
		if (rc == 0)
			rc = make_entry(&r, row, t, cur, n);
	}
	if (v == VERIFY_BESIDE && (snap_check_finish(check, rc == 0 ? e : &(struct sbx_error){ 0 }) != 0))
		rc = -1;
	for (size_t k = 0; k < n; k++)
		cursor_close(&cur[k]);
	sbx_map_free(&r.verified, NULL);
	free(r.buf);
	return rc;
}

json_t *snap_materialized_json(const struct materialized *m)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "files", (json_int_t)m->files, "dirs", (json_int_t)m->dirs,
			 "symlinks", (json_int_t)m->symlinks, "bytes", (json_int_t)m->bytes, "cloned",
			 (json_int_t)m->cloned, "copied", (json_int_t)m->copied);
}
