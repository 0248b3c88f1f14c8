/* snapshots.c — immutable remote workspace snapshots (runner-api 4 rows
 * 37-38): each selected file copied into a content-addressed object store
 * while hashed, a manifest per snapshot; reads serve only the owning
 * workspace's selected paths, whatever became of the live workspace. */
#include "snapshots.h"
#include "collect.h"
#include "../lib/uuid.h"
#include "../lib/atomic_file.h"
#include "../lib/beneath.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "remote_path.h"
#include "../lib/snap_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (1u << 20)

static void store_dir(char *out, size_t size, const char *leaf)
{
	snprintf(out, size, "%s/remote-snapshots%s%s", g_server.cfg.data_dir, leaf ? "/" : "", leaf ? leaf : "");
}

/* Copies in (a file below the workspace) into the object store; its hash. */
static int store_object(int in, char sha[SBX_SHA256_HEX_LEN + 1])
{
	char objects[PATH_MAX + 32], tmp[PATH_MAX + 64], final[PATH_MAX + 128];
	store_dir(objects, sizeof(objects), "objects");
	mkdir(objects, 0700);
	snprintf(tmp, sizeof(tmp), "%s/.incoming-XXXXXX", objects);
	int out = mkostemp(tmp, O_CLOEXEC);
	struct sbx_sha256 *h = sbx_sha256_new();
	char *buf = malloc(COPY_CHUNK);
	ssize_t n = 0;
	while (out >= 0 && h && buf && (n = read(in, buf, COPY_CHUNK)) > 0) {
		sbx_sha256_update(h, buf, (size_t)n);
		if (sbx_write_all(out, buf, (size_t)n) != 0) {
			n = -1;
			break;
		}
	}
	free(buf);
	int rc = out >= 0 && h && n == 0 && fsync(out) == 0 ? 0 : -1;
	if (h)
		sbx_sha256_final(h, sha);
	if (out >= 0)
		close(out);
	snprintf(final, sizeof(final), "%s/%s", objects, sha);
	/* Same bytes, same name: an existing object is replaced by this fresh
	 * copy, which collection spares (snapshots_hold). */
	if (rc == 0 && rename(tmp, final) != 0)
		rc = -1;
	if (rc != 0)
		unlink(tmp);
	return rc;
}

enum MHD_Result remote_snapshot_create(struct req *r)
{
	enum MHD_Result sent;
	char key[SBX_REMOTE_KEY_MAX + 1], id[37], when[32], path[PATH_MAX + 64];
	json_t *doc = body_object(r, &sent);
	if (!doc)
		return sent;
	json_t *clean;
	if (!remote_paths(r, json_object_get(doc, "paths"), &clean, &sent)) {
		json_decref(doc);
		return sent;
	}
	const char *raw = json_string_value(json_object_get(doc, "workspace"));
	int root = remote_workspace(r, raw, true, &sent);
	bool ok = root >= 0 && sbx_remote_key(raw, key, sizeof(key));
	json_decref(doc);
	if (!ok) {
		if (root >= 0)
			close(root);
		json_decref(clean);
		return sent;
	}
	/* Listed and read relative to the one fd of the key's directory. */
	struct sbx_snap_scan scan = { 0 };
	struct sbx_error e;
	if (sbx_snap_scan_at(root, &scan, &e) != 0) {
		close(root);
		json_decref(clean);
		return reply_error(r, 400, "Cannot read the remote workspace");
	}
	struct snapshots_hold hold;
	snapshots_hold(&hold);
	json_t *files = json_array();
	for (size_t i = 0; i < scan.len && ok; i++) {
		const struct sbx_snap_entry *en = &scan.v[i];
		if (en->type != SBX_ENTRY_FILE || !remote_selected(en->path, clean))
			continue;
		char sha[SBX_SHA256_HEX_LEN + 1];
		struct stat st;
		int fd = sbx_open_beneath(root, en->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, SBX_BENEATH_NO_SYMLINKS);
		ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && store_object(fd, sha) == 0;
		if (fd >= 0)
			close(fd);
		if (ok)
			json_array_append_new(files, json_pack("{s:s,s:I,s:s,s:I}", "path", en->path, "size",
							       (json_int_t)st.st_size, "sha256", sha, "executable",
							       (json_int_t)(st.st_mode & 0111)));
	}
	close(root);
	sbx_snap_scan_free(&scan);
	json_decref(clean);
	if (!ok) {
		snapshots_release(&hold);
		json_decref(files);
		return reply_error(r, 400, "Cannot snapshot the remote workspace: a file changed or vanished while it was read");
	}
	sbx_uuid4("", id, sizeof(id));
	sbx_iso_time(sbx_wall_ms(), when);
	json_t *snap = json_pack("{s:s,s:s,s:s,s:o}", "id", id, "workspace", key, "capturedAt", when, "files", files);
	char *text = json_dumps(snap, JSON_COMPACT);
	store_dir(path, sizeof(path), id);
	strcat(path, ".json");
	bool written = text && sbx_atomic_write(path, text, strlen(text), 0600, &e) == 0;
	snapshots_release(&hold);
	free(text);
	if (!written) {
		json_decref(snap);
		return reply_error(r, 400, "Cannot record the snapshot");
	}
	collect_kick(COLLECT_SNAPSHOTS); /* the key may now hold more than it keeps */
	return reply_json(r, 201, snap);
}

enum MHD_Result remote_snapshot_file(struct req *r, const char *id)
{
	char key[SBX_REMOTE_KEY_MAX + 1], rel[SBX_REMOTE_PATH_MAX + 1], path[PATH_MAX + 128];
	struct sbx_error e;
	if (!sbx_remote_key(query(r, "workspace"), key, sizeof(key)))
		return reply_error(r, 400, "Invalid remote workspace key");
	if (!sbx_remote_rel_path(query(r, "path"), rel, sizeof(rel)))
		return reply_error(r, 400, "Invalid remote workspace path");
	store_dir(path, sizeof(path), id);
	strcat(path, ".json");
	json_t *snap = sbx_json_load(path, 16u << 20, &e);
	/* Another workspace's snapshot reads exactly like a missing one. */
	if (!snap || strcmp(sbx_json_string_or(snap, "workspace", ""), key) != 0) {
		json_decref(snap);
		return reply_error(r, 400, "Remote workspace snapshot not found");
	}
	const char *sha = NULL;
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(snap, "files"), i, f)
		if (!strcmp(json_string_value(json_object_get(f, "path")), rel))
			sha = json_string_value(json_object_get(f, "sha256"));
	if (!sha) {
		json_decref(snap);
		return reply_error(r, 400, "The path was not selected in this snapshot: %s", rel);
	}
	store_dir(path, sizeof(path), "objects/");
	strcat(path, sha);
	json_decref(snap);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) { /* collection has it aside for a moment (snapshots_gc.c) */
		store_dir(path, sizeof(path), "objects/.doomed-");
		strcat(path, sha);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		return reply_error(r, 400, "Remote workspace snapshot object is missing");
	}
	return reply_file(r, fd, st.st_size);
}
