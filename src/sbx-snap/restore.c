/* restore.c — a manifest back into a directory: every path checked,
 * every parent opened without following symlinks, every content verified
 * against its digest while it is copied. Also the diff of two manifests. */
#include "../lib/snap_store.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include "../lib/hash.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens the directory holding path below rootfd, one component at a time,
 * refusing symlinks; *name points at the last component. */
static int open_parent(int rootfd, char *path, char **name)
{
	int fd = dup(rootfd);
	char *p = path;
	for (char *slash; fd >= 0 && (slash = strchr(p, '/'));) {
		*slash = '\0';
		int next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		*slash = '/';
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*name = p;
	return fd;
}

static int copy_verified(const char *store, const char *digest, int out, struct sbx_error *e)
{
	char path[PATH_MAX], buf[65536], hex[72];
	struct sbx_sha256 *md = sbx_sha256_new();
	int in;

	sbx_snap_object_path(store, digest, path, sizeof(path));
	if ((in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0 || !md) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "missing-object", "%s: object missing from the store", digest);
		sbx_sha256_free(md);
		if (in >= 0)
			close(in);
		return -1;
	}
	for (ssize_t r; (r = read(in, buf, sizeof(buf))) != 0;) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || sbx_write_all(out, buf, (size_t)r) != 0) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "restore-write", "%s: %s", digest, strerror(errno));
			close(in);
			sbx_sha256_free(md);
			return -1;
		}
		sbx_sha256_update(md, buf, (size_t)r);
	}
	close(in);
	memcpy(hex, "sha256:", 7);
	sbx_sha256_final(md, hex + 7);
	if (strcmp(hex, digest) != 0) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "corrupt-object", "%s: content does not match its digest", digest);
		return -1;
	}
	return 0;
}

static int restore_entry(const char *store, int rootfd, const json_t *row, struct sbx_error *e)
{
	const char *type = sbx_json_string_or(row, "type", "");
	char path[PATH_MAX], *name;
	int rc = -1;

	snprintf(path, sizeof(path), "%s", sbx_json_string_or(row, "path", ""));
	if (!sbx_path_plain_relative(path)) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "bad-manifest", "unsafe path '%.200s' in the manifest", path);
		return -1;
	}
	int dirfd = open_parent(rootfd, path, &name);
	if (dirfd < 0) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "bad-manifest", "%.300s: parent is not a directory: %s", path, strerror(errno));
		return -1;
	}
	if (!strcmp(type, "dir")) {
		rc = mkdirat(dirfd, name, 0755);
	} else if (!strcmp(type, "symlink")) {
		rc = symlinkat(sbx_json_string_or(row, "target", ""), dirfd, name);
	} else if (!strcmp(type, "file") && sbx_snap_valid_digest(sbx_json_string_or(row, "digest", ""))) {
		mode_t mode = sbx_json_bool_or(row, "exec", false) ? 0755 : 0644;
		int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0) {
			/* The umask must not eat the exec bit. */
			rc = fchmod(fd, mode) == 0 ? copy_verified(store, json_string_value(json_object_get(row, "digest")), fd, e) : -1;
			close(fd);
			close(dirfd);
			return rc;
		}
	} else {
		close(dirfd);
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "bad-manifest", "%.300s: unknown entry type '%.20s'", path, type);
		return -1;
	}
	if (rc != 0)
		sbx_error_set(e, SBX_EXIT_INTERNAL, "restore-write", "%.300s: %s", path, strerror(errno));
	close(dirfd);
	return rc;
}

static bool dir_is_empty(int fd)
{
	int listfd = dup(fd);
	DIR *d = listfd >= 0 ? fdopendir(listfd) : NULL;
	bool empty = d != NULL;
	for (struct dirent *de; d && (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	if (d)
		closedir(d);
	return empty;
}

int sbx_snap_restore(const char *store, const char *digest, const char *dir, struct sbx_error *e)
{
	json_t *m = sbx_snap_manifest(store, digest, e);
	if (!m)
		return -1;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%.300s: %s", dir, strerror(errno));
		json_decref(m);
		return -1;
	}
	int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	int rc = rootfd < 0 ? -1 : 0;
	if (rootfd < 0)
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%.300s: %s", dir, strerror(errno));
	else if (!dir_is_empty(rootfd)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "not-empty", "%.300s: restore needs an absent or empty directory", dir);
		rc = -1;
	}
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(m, "entries"), i, row) {
		if (rc == 0)
			rc = restore_entry(store, rootfd, row, e);
	}
	if (rootfd >= 0)
		close(rootfd);
	json_decref(m);
	return rc;
}

/* The fields that make two entries of one path the same. */
static bool same_entry(const json_t *a, const json_t *b)
{
	static const char *const keys[] = { "type", "exec", "digest", "target" };
	for (size_t i = 0; i < 4; i++)
		if (!json_equal(json_object_get(a, keys[i]), json_object_get(b, keys[i])) &&
		    (json_object_get(a, keys[i]) || json_object_get(b, keys[i])))
			return false;
	return true;
}

json_t *sbx_snap_diff(const char *store, const char *a, const char *b, struct sbx_error *e)
{
	char da[72], db[72];
	if (sbx_snap_resolve(store, a, da, e) != 0 || sbx_snap_resolve(store, b, db, e) != 0)
		return NULL;
	json_t *ma = sbx_snap_manifest(store, da, e), *mb = ma ? sbx_snap_manifest(store, db, e) : NULL;
	if (!mb) {
		json_decref(ma);
		return NULL;
	}
	json_t *created = json_array(), *modified = json_array(), *deleted = json_array();
	json_t *ea = json_object_get(ma, "entries"), *eb = json_object_get(mb, "entries");
	size_t i = 0, j = 0;
	while (i < json_array_size(ea) || j < json_array_size(eb)) {
		json_t *x = json_array_get(ea, i), *y = json_array_get(eb, j);
		int cmp = !x ? 1 : !y ? -1 : strcmp(sbx_json_string_or(x, "path", ""), sbx_json_string_or(y, "path", ""));
		json_t *side = cmp < 0 ? x : y;
		bool is_dir = !strcmp(sbx_json_string_or(side, "type", ""), "dir");
		if (cmp < 0 && !is_dir)
			json_array_append(deleted, json_object_get(x, "path"));
		else if (cmp > 0 && !is_dir)
			json_array_append(created, json_object_get(y, "path"));
		else if (cmp == 0 && !same_entry(x, y))
			json_array_append(modified, json_object_get(y, "path"));
		i += cmp <= 0;
		j += cmp >= 0;
	}
	json_decref(ma);
	json_decref(mb);
	return json_pack("{s:s,s:s,s:o,s:o,s:o}", "from", da, "to", db, "created", created,
			 "modified", modified, "deleted", deleted);
}
