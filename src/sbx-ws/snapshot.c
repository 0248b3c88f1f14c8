/* snapshot.c — immutable remote workspace snapshots (runner-api 4 rows
 * 37-38): each selected file copied into a content-addressed object store
 * while hashed, a manifest per snapshot; reads serve only the owning
 * workspace's selected paths, whatever became of the live workspace. */
#include "ws.h"
#include "snapshot.h"
#include "snapshot_gc.h"
#include "../lib/atomic_file.h"
#include "../lib/beneath.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/snap_scan.h"
#include "../lib/uuid.h"
#include "../lib/datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (1u << 20)
#define MANIFEST_MAX (16u << 20)

/* Copies in (a file below the workspace, size bytes when it was opened)
 * into the object store; its hash. Exactly size bytes: a file that shrank
 * meanwhile fails, one that grew is stored as it was (the workload cannot
 * make one snapshot write more than the sizes it was charged for). */
static int store_object(const char *data, int in, uint64_t size, char sha[SBX_SHA256_HEX_LEN + 1])
{
	char objects[PATH_MAX + 32], tmp[PATH_MAX + 64], final[PATH_MAX + 128];
	snapshot_store_path(data, "objects", objects, sizeof(objects));
	mkdir(objects, 0700);
	snprintf(tmp, sizeof(tmp), "%s/.incoming-XXXXXX", objects);
	int out = mkostemp(tmp, O_CLOEXEC);
	struct sbx_sha256 *h = sbx_sha256_new();
	char *buf = malloc(COPY_CHUNK);
	ssize_t n = 0;
	uint64_t left = size;
	while (out >= 0 && h && buf && left > 0 &&
	       (n = read(in, buf, left < COPY_CHUNK ? (size_t)left : COPY_CHUNK)) > 0) {
		sbx_sha256_update(h, buf, (size_t)n);
		left -= (uint64_t)n;
		if (sbx_write_all(out, buf, (size_t)n) != 0) {
			n = -1;
			break;
		}
	}
	free(buf);
	int rc = out >= 0 && h && n >= 0 && left == 0 && fsync(out) == 0 ? 0 : -1;
	if (h)
		sbx_sha256_final(h, sha);
	if (out >= 0)
		close(out);
	snprintf(final, sizeof(final), "%s/%s", objects, sha);
	/* Same bytes, same name: an existing object is replaced by this fresh
	 * copy, which collection spares (snapshot_hold). */
	if (rc == 0 && rename(tmp, final) != 0)
		rc = -1;
	if (rc != 0 && out >= 0)
		unlink(tmp);
	return rc;
}

/* The selected files of the scan, each stored, at most max_bytes in all
 * (0: no cap) as they are when opened; the files array or NULL. */
static json_t *store_files(const char *data, int root, const struct sbx_snap_scan *scan, const json_t *clean,
			   long long max_bytes)
{
	json_t *files = json_array();
	unsigned long long total = 0;
	for (size_t i = 0; i < scan->len; i++) {
		const struct sbx_snap_entry *en = &scan->v[i];
		if (en->type != SBX_ENTRY_FILE || !ws_selected(en->path, clean))
			continue;
		char sha[SBX_SHA256_HEX_LEN + 1];
		struct stat st;
		int fd = sbx_open_beneath(root, en->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, SBX_BENEATH_NO_SYMLINKS);
		bool ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
			  (total += (unsigned long long)st.st_size, !max_bytes || total <= (unsigned long long)max_bytes) &&
			  store_object(data, fd, (uint64_t)st.st_size, sha) == 0;
		if (fd >= 0)
			close(fd);
		if (!ok) {
			json_decref(files);
			return NULL;
		}
		json_array_append_new(files, json_pack("{s:s,s:I,s:s,s:I}", "path", en->path, "size", (json_int_t)st.st_size,
						       "sha256", sha, "executable", (json_int_t)(st.st_mode & 0111)));
	}
	return files;
}

int ws_snapshot(const struct ws_opts *o, const char *raw_key, char *const *paths, int n, struct sbx_error *e)
{
	char key[SBX_REMOTE_KEY_MAX + 1], id[37], when[32], path[PATH_MAX + 64];
	json_t *clean = ws_selection(paths, n, o->only, e);
	if (!clean)
		return -1;
	int root = ws_open(o->data, raw_key, true, key, e);
	if (root < 0) {
		json_decref(clean);
		return -1;
	}
	/* Listed and read relative to the one fd of the key's directory. */
	struct sbx_snap_scan scan = { 0 };
	struct sbx_error se;
	if (sbx_snap_scan_at(root, &scan, &se) != 0) {
		close(root);
		json_decref(clean);
		sbx_error_set(e, SBX_EXIT_USAGE, "scan", "Cannot read the remote workspace");
		return -1;
	}
	/* What the selection weighs, from the scan: over the workspace byte
	 * cap, nothing is copied (sparse files count at their size). */
	unsigned long long selected = 0;
	for (size_t i = 0; i < scan.len; i++)
		if (scan.v[i].type == SBX_ENTRY_FILE && ws_selected(scan.v[i].path, clean))
			selected += scan.v[i].size;
	struct snapshot_hold hold = { .fd = -1 };
	json_t *files = NULL;
	if (o->max_bytes && selected > (unsigned long long)o->max_bytes) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "too-large",
			      "Remote workspace snapshot exceeds the workspace byte limit (%lld bytes)", o->max_bytes);
	} else if (snapshot_hold(o->data, &hold, e) == 0) {
		files = store_files(o->data, root, &scan, clean, o->max_bytes);
		if (!files)
			sbx_error_set(e, SBX_EXIT_USAGE, "vanished",
				      "Cannot snapshot the remote workspace: a file changed or vanished while it was read, or "
				      "the selection grew past the workspace byte limit");
	}
	close(root);
	sbx_snap_scan_free(&scan);
	json_decref(clean);
	if (!files) {
		if (hold.fd >= 0)
			snapshot_release(&hold);
		return -1;
	}
	sbx_uuid4("", id, sizeof(id));
	sbx_iso_time(sbx_wall_ms(), when);
	json_t *snap = json_pack("{s:s,s:s,s:s,s:o}", "id", id, "workspace", key, "capturedAt", when, "files", files);
	char *text = json_dumps(snap, JSON_COMPACT);
	snapshot_store_path(o->data, id, path, sizeof(path));
	strcat(path, ".json");
	bool written = text && sbx_atomic_write(path, text, strlen(text), 0600, &se) == 0;
	snapshot_release(&hold);
	json_decref(snap);
	if (!written) {
		free(text);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "record", "Cannot record the snapshot");
		return -1;
	}
	printf("%s\n", text);
	free(text);
	return 0;
}

static bool uuid_like(const char *id)
{
	return strlen(id) == 36 && strspn(id, "0123456789abcdefABCDEF-") == 36;
}

/* snapshot-cat KEY ID PATH: the object of PATH in the snapshot, served
 * when the snapshot is KEY's and selected PATH. */
int ws_snapshot_cat(const struct ws_opts *o, const char *raw_key, const char *id, const char *raw_path,
		    struct sbx_error *e)
{
	char key[SBX_REMOTE_KEY_MAX + 1], rel[SBX_REMOTE_PATH_MAX + 1], path[PATH_MAX + 128];
	struct sbx_error le;
	if (!sbx_remote_key(raw_key, key, sizeof(key))) {
		sbx_error_set(e, SBX_EXIT_USAGE, "invalid-key", "Invalid remote workspace key");
		return -1;
	}
	if (!ws_rel_path(raw_path, rel, e))
		return -1;
	json_t *snap = NULL;
	if (uuid_like(id)) {
		snapshot_store_path(o->data, id, path, sizeof(path));
		strcat(path, ".json");
		snap = sbx_json_load(path, MANIFEST_MAX, &le);
	}
	/* Another workspace's snapshot reads exactly like a missing one. */
	if (!snap || strcmp(sbx_json_string_or(snap, "workspace", ""), key) != 0) {
		json_decref(snap);
		sbx_error_set(e, SBX_EXIT_USAGE, "snapshot-not-found", "Remote workspace snapshot not found");
		return -1;
	}
	const char *sha = NULL;
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(snap, "files"), i, f) {
		const char *p = json_string_value(json_object_get(f, "path"));
		if (p && !strcmp(p, rel))
			sha = json_string_value(json_object_get(f, "sha256"));
	}
	if (!sha || strlen(sha) != SBX_SHA256_HEX_LEN || strspn(sha, "0123456789abcdef") != SBX_SHA256_HEX_LEN) {
		json_decref(snap);
		sbx_error_set(e, SBX_EXIT_USAGE, "not-selected", "The path was not selected in this snapshot: %s", rel);
		return -1;
	}
	char name[SBX_SHA256_HEX_LEN + 16];
	snprintf(name, sizeof(name), "objects/%s", sha);
	snapshot_store_path(o->data, name, path, sizeof(path));
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) { /* collection has it aside for a moment (snapshot_gc.c) */
		snprintf(name, sizeof(name), "objects/.doomed-%s", sha);
		snapshot_store_path(o->data, name, path, sizeof(path));
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	json_decref(snap);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "object-missing", "Remote workspace snapshot object is missing");
		return -1;
	}
	return ws_serve(o, fd, e);
}
