/* snapshot.c — immutable remote workspace snapshots (runner-api 4 rows
 * 37-38) in the remote snapshot store, an sbx-snap store (snapshot.h):
 * each selected file copied into its objects while hashed and pinned, a
 * manifest of exactly the selection committed to the key's ref, an index
 * record per snapshot id; reads serve only the owning workspace's
 * selected paths, whatever became of the live workspace. */
#include "ws.h"
#include "snapshot.h"
#include "../lib/atomic_file.h"
#include "../lib/beneath.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"
#include "../lib/json.h"
#include "../lib/snap_scan.h"
#include "../lib/snap_store.h"
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

#define MANIFEST_MAX (16u << 20)

void snapshot_ref(const char *key, char out[80])
{
	char hex[SBX_SHA256_HEX_LEN + 1];
	sbx_sha256_hex(key, strlen(key), hex);
	snprintf(out, 80, "remote-%s", hex);
}

bool snapshot_id_like(const char *id)
{
	return strlen(id) == 36 && strspn(id, "0123456789abcdefABCDEF-") == 36;
}

/* The selected files of the scan, each stored (pinned) for exactly the
 * size it had when opened, at most max_bytes in all (0: no cap); sel gets
 * their manifest entries (paths borrowed from scan). The files array or
 * NULL. */
static json_t *store_files(const char *store, int root, const struct sbx_snap_scan *scan, const json_t *clean,
			   long long max_bytes, struct sbx_snap_pin *pin, struct sbx_snap_scan *sel)
{
	json_t *files = json_array();
	unsigned long long total = 0;
	struct sbx_error se;
	for (size_t i = 0; i < scan->len; i++) {
		const struct sbx_snap_entry *en = &scan->v[i];
		if (en->type != SBX_ENTRY_FILE || !ws_selected(en->path, clean))
			continue;
		char digest[72];
		struct stat st;
		int fd = sbx_open_beneath(root, en->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, SBX_BENEATH_NO_SYMLINKS);
		bool ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
			  (total += (unsigned long long)st.st_size, !max_bytes || total <= (unsigned long long)max_bytes) &&
			  sbx_snap_store_fd_exact(store, fd, (uint64_t)st.st_size, pin, digest, &se) == 0;
		if (fd >= 0)
			close(fd);
		if (!ok) {
			json_decref(files);
			return NULL;
		}
		struct sbx_snap_entry *x = &sel->v[sel->len++];
		memset(x, 0, sizeof(*x));
		x->path = en->path;
		x->type = SBX_ENTRY_FILE;
		x->exec = (st.st_mode & S_IXUSR) != 0;
		x->size = (uint64_t)st.st_size;
		memcpy(x->digest, digest, sizeof(x->digest));
		json_array_append_new(files, json_pack("{s:s,s:I,s:s,s:I}", "path", en->path, "size", (json_int_t)st.st_size,
						       "sha256", digest + 7, "executable", (json_int_t)(st.st_mode & 0111)));
	}
	return files;
}

int ws_snapshot(const struct ws_opts *o, const char *raw_key, char *const *paths, int n, struct sbx_error *e)
{
	char key[SBX_REMOTE_KEY_MAX + 1], id[37], when[32], store[PATH_MAX], path[PATH_MAX + 128], ref[80];
	json_t *clean = ws_selection(paths, n, o->only, e);
	if (!clean)
		return -1;
	int root = ws_open(o->data, raw_key, true, key, e);
	if (root < 0) {
		json_decref(clean);
		return -1;
	}
	snapshot_store_path(o->data, NULL, store, sizeof(store));
	snapshot_ref(key, ref);
	/* Listed and read relative to the one fd of the key's directory. */
	struct sbx_snap_scan scan = { 0 }, sel = { 0 };
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
	/* Every object this snapshot stores stays pinned (a live maker's
	 * flock) until the ref names its manifest and the index record is
	 * written: no collection, in any process, takes them meanwhile. */
	struct sbx_snap_pin pin;
	sbx_snap_pin_init(&pin);
	json_t *files = NULL, *receipt = NULL;
	sel.v = calloc(scan.len ? scan.len : 1, sizeof(*sel.v));
	if (!sel.v) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "Cannot snapshot the remote workspace");
	} else if (o->max_bytes && selected > (unsigned long long)o->max_bytes) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "too-large",
			      "Remote workspace snapshot exceeds the workspace byte limit (%lld bytes)", o->max_bytes);
	} else if (sbx_snap_prepare(store, e) == 0) {
		files = store_files(store, root, &scan, clean, o->max_bytes, &pin, &sel);
		if (!files)
			sbx_error_set(e, SBX_EXIT_USAGE, "vanished",
				      "Cannot snapshot the remote workspace: a file changed or vanished while it was read, or "
				      "the selection grew past the workspace byte limit");
		else if (!(receipt = sbx_snap_commit_entries(store, ref, &sel, MANIFEST_MAX, &pin, &se)))
			sbx_error_set(e, SBX_EXIT_INTERNAL, "record", "Cannot record the snapshot");
	}
	close(root);
	free(sel.v); /* its paths are the scan's */
	sbx_snap_scan_free(&scan);
	json_decref(clean);
	if (!receipt) {
		json_decref(files);
		sbx_snap_pin_close(&pin);
		return -1;
	}
	sbx_uuid4("", id, sizeof(id));
	sbx_iso_time(sbx_wall_ms(), when);
	json_t *rec = json_pack("{s:s,s:s,s:s,s:O}", "id", id, "workspace", key, "capturedAt", when, "digest",
				json_object_get(receipt, "digest"));
	char *rec_text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
	snprintf(path, sizeof(path), "%s/" SNAPSHOT_INDEX_DIR, store);
	bool written = rec_text && sbx_mkdir_p(path, 0700, &se) == 0 &&
		       (snprintf(path, sizeof(path), "%s/" SNAPSHOT_INDEX_DIR "/%s.json", store, id),
			sbx_atomic_write(path, rec_text, strlen(rec_text), 0600, &se) == 0);
	sbx_snap_pin_close(&pin);
	free(rec_text);
	json_decref(rec);
	json_decref(receipt);
	if (!written) {
		json_decref(files);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "record", "Cannot record the snapshot");
		return -1;
	}
	json_t *snap = json_pack("{s:s,s:s,s:s,s:o}", "id", id, "workspace", key, "capturedAt", when, "files", files);
	char *text = snap ? json_dumps(snap, JSON_COMPACT) : NULL;
	json_decref(snap);
	if (!text) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "record", "Cannot record the snapshot");
		return -1;
	}
	printf("%s\n", text);
	free(text);
	return 0;
}

/* snapshot-cat KEY ID PATH: the object of PATH in the snapshot, served
 * when the snapshot is KEY's and selected PATH. */
int ws_snapshot_cat(const struct ws_opts *o, const char *raw_key, const char *id, const char *raw_path,
		    struct sbx_error *e)
{
	char key[SBX_REMOTE_KEY_MAX + 1], rel[SBX_REMOTE_PATH_MAX + 1], store[PATH_MAX], path[PATH_MAX + 128];
	struct sbx_error le;
	if (!sbx_remote_key(raw_key, key, sizeof(key))) {
		sbx_error_set(e, SBX_EXIT_USAGE, "invalid-key", "Invalid remote workspace key");
		return -1;
	}
	if (!ws_rel_path(raw_path, rel, e))
		return -1;
	snapshot_store_path(o->data, NULL, store, sizeof(store));
	json_t *rec = NULL, *manifest = NULL;
	if (snapshot_id_like(id)) {
		snprintf(path, sizeof(path), "%s/" SNAPSHOT_INDEX_DIR "/%s.json", store, id);
		rec = sbx_json_load(path, SNAPSHOT_INDEX_MAX, &le);
	}
	const char *digest = sbx_json_string_or(rec, "digest", "");
	/* Another workspace's snapshot reads exactly like a missing one, and
	 * so does one whose manifest collection dropped. */
	if (!rec || strcmp(sbx_json_string_or(rec, "workspace", ""), key) != 0 || !sbx_snap_valid_digest(digest) ||
	    !(manifest = sbx_snap_manifest(store, digest, &le))) {
		json_decref(rec);
		sbx_error_set(e, SBX_EXIT_USAGE, "snapshot-not-found", "Remote workspace snapshot not found");
		return -1;
	}
	json_decref(rec);
	const char *obj = NULL;
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(manifest, "entries"), i, f) {
		const char *p = json_string_value(json_object_get(f, "path"));
		if (p && !strcmp(p, rel) && !strcmp(sbx_json_string_or(f, "type", ""), "file"))
			obj = json_string_value(json_object_get(f, "digest"));
	}
	if (!obj || !sbx_snap_valid_digest(obj)) {
		json_decref(manifest);
		sbx_error_set(e, SBX_EXIT_USAGE, "not-selected", "The path was not selected in this snapshot: %s", rel);
		return -1;
	}
	int fd = sbx_snap_object_path(store, obj, path, sizeof(path)) == 0
			 ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
			 : -1;
	json_decref(manifest);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "object-missing", "Remote workspace snapshot object is missing");
		return -1;
	}
	return ws_serve(o, fd, e);
}
