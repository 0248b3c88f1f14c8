/* snap_store.c — the store's layout: names, locks, refs, manifests. */
#include "snap_store.h"
#include "atomic_file.h"
#include "exitcodes.h"
#include "hash.h"
#include "io.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

bool sbx_snap_valid_ref(const char *name)
{
	size_t n = strlen(name);
	/* "<name>.log" is the reflog's file. */
	if (n == 0 || n > 128 || name[0] == '.' || (n >= 4 && strcmp(name + n - 4, ".log") == 0))
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-'))
			return false;
	return true;
}

bool sbx_snap_valid_digest(const char *d)
{
	if (strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + 64)
		return false;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

int sbx_snap_object_path(const char *store, const char *digest, char *out, size_t size)
{
	const char *hex = digest + 7;
	int n = snprintf(out, size, "%s/objects/%.2s/%s", store, hex, hex + 2);
	return n > 0 && (size_t)n < size ? 0 : -1;
}

int sbx_snap_lockfile(const char *store, const char *name, int how, struct sbx_error *e)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", store, name) >= (int)sizeof(path)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "path-too-long", "store path too long");
		return -1;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "store-unusable", "%s: %s", path, strerror(errno));
		return -1;
	}
	while (flock(fd, how) != 0) {
		if (errno != EINTR || (how & LOCK_NB)) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "store-unusable", "%s: flock: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
	}
	return fd;
}

int sbx_snap_lock(const char *store, bool exclusive, struct sbx_error *e)
{
	return sbx_snap_lockfile(store, "lock", exclusive ? LOCK_EX : LOCK_SH, e);
}

int sbx_snap_resolve(const char *store, const char *what, char digest[72], struct sbx_error *e)
{
	if (sbx_snap_valid_digest(what)) {
		snprintf(digest, 72, "%s", what);
		return 0;
	}
	if (!sbx_snap_valid_ref(what)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-ref", "'%.80s' is neither a sha256 digest nor a ref name", what);
		return -1;
	}
	char path[PATH_MAX];
	size_t len;
	snprintf(path, sizeof(path), "%s/refs/%s", store, what);
	char *text = sbx_read_file_capped(path, 256, &len, e);
	if (!text) {
		sbx_error_set(e, SBX_EXIT_USAGE, "unknown-ref", "ref '%s': no such ref in %.200s", what, store);
		return -1;
	}
	text[strcspn(text, "\n")] = '\0';
	int ok = sbx_snap_valid_digest(text);
	if (ok)
		snprintf(digest, 72, "%s", text);
	else
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "corrupt-ref", "ref '%s' does not hold a digest", what);
	free(text);
	return ok ? 0 : -1;
}

json_t *sbx_snap_manifest(const char *store, const char *digest, struct sbx_error *e)
{
	char path[PATH_MAX], hex[SBX_SHA256_HEX_LEN + 1];
	size_t len;

	if (!sbx_snap_valid_digest(digest) || sbx_snap_object_path(store, digest, path, sizeof(path)) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-digest", "'%.80s' is not a sha256 digest", digest);
		return NULL;
	}
	char *text = sbx_read_file_capped(path, SBX_SNAP_MANIFEST_READ_MAX, &len, e);
	if (!text) {
		sbx_error_set(e, SBX_EXIT_USAGE, "unknown-digest", "%s: no such object in %.200s", digest, store);
		return NULL;
	}
	sbx_sha256_hex(text, len, hex);
	if (strcmp(hex, digest + 7) != 0) {
		free(text);
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "corrupt-object", "%s: content does not match its digest", digest);
		return NULL;
	}
	json_t *m = sbx_json_parse(text, len, digest, e);
	free(text);
	if (m && (!json_is_array(json_object_get(m, "entries")) ||
		  strcmp(sbx_json_string_or(m, "mediaType", ""), SBX_SNAP_MEDIA_TYPE) != 0)) {
		json_decref(m);
		sbx_error_set(e, SBX_EXIT_USAGE, "not-a-snapshot", "%s is not a snapshot manifest", digest);
		return NULL;
	}
	return m;
}

json_t *sbx_snap_log(const char *store, const char *ref, struct sbx_error *e)
{
	char path[PATH_MAX];
	size_t len;

	if (!sbx_snap_valid_ref(ref)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-ref", "'%.80s' is not a ref name", ref);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/refs/%s.log", store, ref);
	char *text = sbx_read_file_capped(path, 64u << 20, &len, e);
	if (!text) {
		sbx_error_set(e, SBX_EXIT_USAGE, "unknown-ref", "ref '%s' has no log in %.200s", ref, store);
		return NULL;
	}
	json_t *list = json_array();
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *row = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
		if (row && sbx_snap_valid_digest(sbx_json_string_or(row, "digest", "")))
			json_array_append_new(list, row);
		else
			json_decref(row); /* a torn last line after a crash is skipped */
	}
	free(text);
	return list;
}
