/* skills_held.c — a held skill package is verified against its id before
 * an execution mounts it: its manifest must hash to the id, and every
 * skill's files on disk must hash to the skill's hash in that manifest. */
#include "httpd.h"
#include "../lib/beneath.h"
#include "../lib/hash.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/snap_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST ".manifest.json"
#define MANIFEST_CAP (1u << 20)

void skills_packages_dir(char *out, size_t size)
{
	snprintf(out, size, "%.3900s/skill-packages", g_server.cfg.data_dir);
}

static int by_id(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "id")),
		      json_string_value(json_object_get(*(json_t *const *)b, "id")));
}

void skills_package_id(const json_t *skills, char id[SBX_SHA256_HEX_LEN + 1])
{
	size_t n = json_array_size(skills), i;
	json_t **sorted = calloc(n ? n : 1, sizeof(*sorted)), *manifest = json_array();
	for (i = 0; i < n; i++)
		sorted[i] = json_array_get(skills, i);
	qsort(sorted, n, sizeof(*sorted), by_id);
	for (i = 0; i < n; i++) {
		json_t *m = json_object();
		json_object_set(m, "hash", json_object_get(sorted[i], "hash"));
		json_object_set(m, "id", json_object_get(sorted[i], "id"));
		json_object_set(m, "revision", json_object_get(sorted[i], "revision"));
		json_t *v = json_object_get(sorted[i], "version");
		json_object_set(m, "version", v ? v : json_null());
		json_array_append_new(manifest, m);
	}
	free(sorted);
	char *text = json_dumps(manifest, JSON_COMPACT | JSON_PRESERVE_ORDER);
	sbx_sha256_hex(text ? text : "", text ? strlen(text) : 0, id);
	free(text);
	json_decref(manifest);
}

void skills_hash_file(struct sbx_sha256 *h, const char *path, size_t size)
{
	char prefix[4200];
	int len = snprintf(prefix, sizeof(prefix), "%zu:%s:%zu:", strlen(path), path, size);
	sbx_sha256_update(h, prefix, (size_t)len < sizeof(prefix) ? (size_t)len : sizeof(prefix) - 1);
}

int skills_write_manifest(int dirfd, const json_t *skills)
{
	json_t *m = json_array();
	size_t i;
	json_t *s;
	json_array_foreach(skills, i, s)
		json_array_append_new(m, json_pack("{s:O,s:O,s:O,s:O}", "id", json_object_get(s, "id"), "revision",
						   json_object_get(s, "revision"), "version",
						   json_object_get(s, "version") ? json_object_get(s, "version") : json_null(),
						   "hash", json_object_get(s, "hash")));
	char *text = json_dumps(m, JSON_COMPACT);
	json_decref(m);
	int fd = text ? openat(dirfd, MANIFEST, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
	int rc = fd >= 0 && sbx_write_all(fd, text, strlen(text)) == 0 && fsync(fd) == 0 ? 0 : -1;
	if (fd >= 0)
		close(fd);
	free(text);
	return rc;
}

/* The manifest, read below the package fd (regular, capped). */
static json_t *read_manifest(int pkg)
{
	int fd = sbx_open_beneath(pkg, MANIFEST, O_RDONLY | O_NONBLOCK, SBX_BENEATH_NO_SYMLINKS);
	struct stat st;
	if (fd < 0)
		return NULL;
	json_t *doc = NULL;
	char *text = NULL;
	size_t got = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (size_t)st.st_size <= MANIFEST_CAP &&
	    (text = malloc((size_t)st.st_size))) {
		ssize_t n;
		while (got < (size_t)st.st_size && (n = read(fd, text + got, (size_t)st.st_size - got)) > 0)
			got += (size_t)n;
		if (got == (size_t)st.st_size)
			doc = json_loadb(text, got, JSON_REJECT_DUPLICATES, NULL);
	}
	free(text);
	close(fd);
	return json_is_array(doc) ? doc : (json_decref(doc), NULL);
}

/* The skill's files, hashed as an upload is: true when they match. */
static bool skill_matches(int pkg, const char *id, const char *want)
{
	struct sbx_snap_scan scan = { 0 };
	struct sbx_error e;
	char buf[65536], sha[SBX_SHA256_HEX_LEN + 1] = "";
	int dir = sbx_open_beneath(pkg, id, O_PATH | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
	if (dir < 0 || sbx_snap_scan_at(dir, &scan, &e) != 0) {
		if (dir >= 0)
			close(dir);
		return false;
	}
	struct sbx_sha256 *h = sbx_sha256_new();
	bool ok = h != NULL;
	for (size_t i = 0; ok && i < scan.len; i++) {
		const struct sbx_snap_entry *x = &scan.v[i];
		if (x->type == SBX_ENTRY_DIR)
			continue;
		int fd = x->type == SBX_ENTRY_FILE ? sbx_open_beneath(dir, x->path, O_RDONLY | O_NONBLOCK, SBX_BENEATH_NO_SYMLINKS) : -1;
		struct stat st;
		ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
		if (ok)
			skills_hash_file(h, x->path, (size_t)st.st_size);
		for (off_t left = ok ? st.st_size : 0; ok && left > 0;) {
			ssize_t n = read(fd, buf, sizeof(buf));
			ok = n > 0;
			if (ok) {
				sbx_sha256_update(h, buf, (size_t)n);
				left -= n;
			}
		}
		if (fd >= 0)
			close(fd);
	}
	if (h && ok)
		sbx_sha256_final(h, sha);
	else if (h)
		sbx_sha256_free(h);
	sbx_snap_scan_free(&scan);
	close(dir);
	return ok && !strcmp(sha, want);
}

int skills_held_open(const char *root)
{
	char dir[PATH_MAX], rel[PATH_MAX], id[SBX_SHA256_HEX_LEN + 1];
	skills_packages_dir(dir, sizeof(dir));
	if (sbx_path_below(dir, root, rel, sizeof(rel)) != 0 || strlen(rel) != SBX_SHA256_HEX_LEN ||
	    strspn(rel, "0123456789abcdef") != SBX_SHA256_HEX_LEN)
		return -1;
	int top = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int pkg = top < 0 ? -1 : sbx_open_beneath(top, rel, O_RDONLY | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
	if (top >= 0)
		close(top);
	if (pkg < 0)
		return -1;
	json_t *manifest = read_manifest(pkg);
	bool ok = manifest && json_array_size(manifest) > 0;
	if (ok) {
		skills_package_id(manifest, id);
		ok = !strcmp(id, rel);
	}
	size_t i, skills = 0;
	json_t *s;
	json_array_foreach(manifest, i, s) {
		const char *sid = json_string_value(json_object_get(s, "id"));
		ok = ok && sid && strchr(sid, '/') == NULL && sid[0] != '.' &&
		     skill_matches(pkg, sid, json_string_value(json_object_get(s, "hash")) ? json_string_value(json_object_get(s, "hash")) : "");
	}
	/* Nothing beside the skills and the manifest. */
	struct sbx_snap_scan scan = { 0 };
	struct sbx_error e;
	if (ok && sbx_snap_scan_at(pkg, &scan, &e) == 0) {
		for (i = 0; i < scan.len; i++)
			if (!strchr(scan.v[i].path, '/'))
				skills++;
		ok = skills == json_array_size(manifest) + 1;
		sbx_snap_scan_free(&scan);
	} else {
		ok = false;
	}
	json_decref(manifest);
	if (!ok) {
		close(pkg);
		return -2;
	}
	return pkg;
}
