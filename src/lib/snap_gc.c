/* snap_gc.c — mark what any ref or reflog reaches, sweep the rest. Runs
 * under the store's exclusive lock, so no commit is writing meanwhile; the
 * stat caches go too, since they may name objects that are swept. */
#include "snap_store.h"
#include "exitcodes.h"
#include "json.h"
#include "map.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void mark_tree(const char *store, const char *digest, struct sbx_map *live)
{
	struct sbx_error ignored;
	bool seen = false;

	if (!sbx_map_put(live, digest, strlen(digest), NULL, &seen) || seen)
		return;
	json_t *m = sbx_snap_manifest(store, digest, &ignored);
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(m, "entries"), i, row) {
		const char *d = sbx_json_string_or(row, "digest", NULL);
		if (d && sbx_snap_valid_digest(d))
			sbx_map_put(live, d, strlen(d), NULL, NULL);
	}
	json_decref(m);
}

static void mark_refs(const char *store, struct sbx_map *live)
{
	char path[PATH_MAX];
	struct sbx_error ignored;
	snprintf(path, sizeof(path), "%s/refs", store);
	DIR *d = opendir(path);
	for (struct dirent *de; d && (de = readdir(d));) {
		size_t n = strlen(de->d_name);
		if (de->d_name[0] == '.')
			continue;
		if (n > 4 && !strcmp(de->d_name + n - 4, ".log")) {
			char ref[256];
			snprintf(ref, sizeof(ref), "%.*s", (int)(n - 4), de->d_name);
			json_t *log = sbx_snap_log(store, ref, &ignored);
			size_t i;
			json_t *row;
			json_array_foreach(log, i, row)
				mark_tree(store, json_string_value(json_object_get(row, "digest")), live);
			json_decref(log);
		} else {
			char digest[72];
			if (sbx_snap_resolve(store, de->d_name, digest, &ignored) == 0)
				mark_tree(store, digest, live);
		}
	}
	if (d)
		closedir(d);
}

static void empty_dir(const char *store, const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", store, name);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	for (struct dirent *de; d && (de = readdir(d));)
		if (de->d_name[0] != '.')
			unlinkat(fd, de->d_name, 0);
	if (d)
		closedir(d);
}

json_t *sbx_snap_gc(const char *store, struct sbx_error *e)
{
	struct sbx_map live;
	char path[PATH_MAX];
	long long removed = 0, kept = 0, freed = 0;
	int lock = sbx_snap_lock(store, true, e);

	if (lock < 0)
		return NULL;
	sbx_map_init(&live);
	mark_refs(store, &live);
	snprintf(path, sizeof(path), "%s/objects", store);
	DIR *top = opendir(path);
	for (struct dirent *sub; top && (sub = readdir(top));) {
		if (strlen(sub->d_name) != 2 || sub->d_name[0] == '.')
			continue;
		int fd = openat(dirfd(top), sub->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		for (struct dirent *de; d && (de = readdir(d));) {
			char digest[80];
			struct stat st;
			if (de->d_name[0] == '.')
				continue;
			/* Anything not named like an object is left alone. */
			if (snprintf(digest, sizeof(digest), "sha256:%s%s", sub->d_name, de->d_name) >= (int)sizeof(digest) ||
			    !sbx_snap_valid_digest(digest) || sbx_map_has(&live, digest, strlen(digest))) {
				kept++;
				continue;
			}
			if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && unlinkat(fd, de->d_name, 0) == 0) {
				removed++;
				freed += st.st_size;
			}
		}
		if (d)
			closedir(d);
	}
	if (top)
		closedir(top);
	empty_dir(store, "tmp");
	empty_dir(store, "statcache");
	sbx_map_free(&live, NULL);
	close(lock);
	return json_pack("{s:I,s:I,s:I}", "removed", (json_int_t)removed, "kept", (json_int_t)kept,
			 "bytesFreed", (json_int_t)freed);
}
