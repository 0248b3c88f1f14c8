/* remote.c — remote workspaces (runner-api 4 rows 32-36, 5.7): each request
 * opens the key's directory once (no symlink on the way) and works only
 * relative to that fd: listings, reads opened beneath it, uploads published
 * after every check (size and hash, quota) by a link or a rename inside a
 * parent opened without symlinks, and deletes that never follow one. */
#include "snapshots.h"
#include "../lib/quota.h"
#include "remote_path.h"
#include "../lib/snap_scan.h"
#include "../lib/beneath.h"
#include "../lib/workspace_uid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATHS_MAX 50

bool remote_paths(struct req *r, const json_t *paths, json_t **clean, enum MHD_Result *sent)
{
	*clean = NULL;
	if (!paths || json_is_null(paths))
		return true;
	if (!json_is_array(paths) || json_array_size(paths) > PATHS_MAX) {
		*sent = reply_error(r, 400, "paths must be an array of at most %d workspace paths", PATHS_MAX);
		return false;
	}
	*clean = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(paths, i, p) {
		char rel[SBX_REMOTE_PATH_MAX + 1];
		if (!sbx_remote_rel_path(json_string_value(p), rel, sizeof(rel))) {
			json_decref(*clean);
			*clean = NULL;
			*sent = reply_error(r, 400, "Invalid remote workspace path");
			return false;
		}
		json_array_append_new(*clean, json_string(rel));
	}
	return true;
}

bool remote_selected(const char *path, const json_t *clean)
{
	size_t i;
	json_t *p;
	if (!clean)
		return true;
	json_array_foreach(clean, i, p) {
		const char *rel = json_string_value(p);
		size_t n = strlen(rel);
		if (!strcmp(path, rel) || (!strncmp(path, rel, n) && path[n] == '/'))
			return true;
	}
	return false;
}

/* The trimmed key into key, or false with a 400 sent. */
static bool clean_key(struct req *r, const char *raw, char key[SBX_REMOTE_KEY_MAX + 1], enum MHD_Result *sent)
{
	if (sbx_remote_key(raw, key, SBX_REMOTE_KEY_MAX + 1))
		return true;
	*sent = reply_error(r, 400, "Invalid remote workspace key");
	return false;
}

static const char *const NO_SYMLINKS = "Remote workspace path must not contain symbolic links";

int remote_workspace(struct req *r, const char *raw, bool create, enum MHD_Result *sent)
{
	char key[SBX_REMOTE_KEY_MAX + 1];
	if (!clean_key(r, raw, key, sent))
		return -1;
	int fd = sbx_remote_workspace_open(g_server.cfg.data_dir, key, create);
	if (fd < 0)
		*sent = errno == ELOOP ? reply_error(r, 400, "%s", NO_SYMLINKS)
		      : errno == ENOENT ? reply_error(r, 400, "Remote workspace does not exist")
					  : reply_error(r, 400, "Remote workspace is unavailable: %s", strerror(errno));
	return fd;
}

static json_t *file_entry(const struct sbx_snap_entry *e)
{
	char when[32];
	sbx_iso_time(e->mtime_ns / 1000000, when);
	return json_pack("{s:s,s:s,s:I}", "modifiedAt", when, "path", e->path, "size", (json_int_t)e->size);
}

/* Every file, or those named (a directory stands for the files below it). */
static enum MHD_Result list(struct req *r, const char *raw_key, const json_t *paths)
{
	enum MHD_Result sent;
	struct sbx_snap_scan scan = { 0 };
	struct sbx_error e;
	json_t *clean;
	if (!remote_paths(r, paths, &clean, &sent))
		return sent;
	int dir = remote_workspace(r, raw_key, true, &sent);
	int scanned = dir < 0 ? -1 : sbx_snap_scan_at(dir, &scan, &e);
	if (dir >= 0)
		close(dir);
	if (scanned != 0) {
		json_decref(clean);
		return dir >= 0 ? reply_error(r, 400, "%s", e.message) : sent;
	}
	json_t *out = json_array();
	for (size_t i = 0; i < scan.len; i++)
		if (scan.v[i].type == SBX_ENTRY_FILE && remote_selected(scan.v[i].path, clean))
			json_array_append_new(out, file_entry(&scan.v[i]));
	sbx_snap_scan_free(&scan);
	json_decref(clean);
	return reply_json(r, 200, out);
}

/* A read is opened once below the key's fd: symlinks are followed while
 * they stay inside (the kernel refuses an escape); a FIFO or a device is
 * opened without blocking and refused. */
static int open_for_read(struct req *r, int dir, const char *raw_path, struct stat *st, enum MHD_Result *sent)
{
	char rel[SBX_REMOTE_PATH_MAX + 1];
	if (!sbx_remote_rel_path(raw_path, rel, sizeof(rel))) {
		*sent = reply_error(r, 400, "Invalid remote workspace path");
		return -1;
	}
	int fd = sbx_open_beneath(dir, rel, O_RDONLY | O_NONBLOCK, SBX_BENEATH_IN_ROOT);
	if (fd < 0) {
		*sent = errno == EXDEV ? reply_error(r, 400, "Remote workspace path escapes the workspace: %s", rel)
		      : errno == EAGAIN ? reply_error(r, 409, "Remote workspace path changed while it was opened: %s", rel)
					  : reply_error(r, 400, "Remote workspace file not found: %s", rel);
		return -1;
	}
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		*sent = reply_error(r, 400, "Remote workspace path is not a regular file: %s", rel);
		return -1;
	}
	return fd;
}

enum MHD_Result reply_file(struct req *r, int fd, off_t size)
{
	struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)size, fd);
	if (!resp) {
		close(fd);
		return MHD_NO;
	}
	return reply_response(r, 200, resp, "application/octet-stream");
}

static enum MHD_Result read_file(struct req *r)
{
	enum MHD_Result sent;
	struct stat st;
	int dir = remote_workspace(r, query(r, "workspace"), true, &sent);
	if (dir < 0)
		return sent;
	int fd = open_for_read(r, dir, query(r, "path"), &st, &sent);
	close(dir);
	return fd < 0 ? sent : reply_file(r, fd, st.st_size);
}

/* What the upload would make the workspace hold, against the quota. */
static bool within_quota(int dir, int parent, const char *leaf, unsigned long long incoming)
{
	long long max = g_server.cfg.max_workspace_bytes;
	struct sbx_usage u;
	struct sbx_error e;
	struct stat st;
	if (max <= 0)
		return true;
	if (sbx_quota_usage_at(dir, &u, &e) != 0)
		return false;
	unsigned long long total = u.charged_bytes; /* as a run's quota counts */
	sbx_usage_free(&u);
	if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		unsigned long long size = (unsigned long long)st.st_size, disk = (unsigned long long)st.st_blocks * 512;
		unsigned long long charged = size > disk ? size : disk;
		total -= charged < total ? charged : total;
	}
	return total + incoming <= (unsigned long long)max;
}

/* The staged file linked or renamed onto leaf, relative to parent. */
static enum MHD_Result place(struct req *r, struct upload *u, int parent, const char *leaf, const char *rel,
			     const char *sha)
{
	bool overwrite = query(r, "conflict") && !strcmp(query(r, "conflict"), "overwrite");
	long exec = u->verified ? upload_exec_bits(header(r, "x-workspace-executable")) : 0;
	if (upload_place(u, parent, leaf, overwrite, (mode_t)(0644 | (exec & 0111))) != 0) {
		if (!overwrite && errno == EEXIST) /* a plain upload's collision is 409, a verified one's 400 */
			return reply_error(r, u->verified ? 400 : 409, "Remote workspace file already exists");
		return reply_error(r, 400, "Cannot publish the upload: %s", strerror(errno));
	}
	fsync(parent);
	json_t *body = json_pack("{s:s,s:I}", "path", rel, "size", (json_int_t)u->bytes);
	if (u->verified)
		json_object_set_new(body, "sha256", json_string(sha));
	return reply_json(r, 201, body);
}

static enum MHD_Result publish(struct req *r, struct upload *u)
{
	char rel[SBX_REMOTE_PATH_MAX + 1], sha[SBX_SHA256_HEX_LEN + 1], msg[600];
	enum MHD_Result sent;
	unsigned status = upload_check(r->conn, u->verified, msg, sizeof(msg));
	if (status)
		return reply_error(r, status, "%s", msg);
	if (u->over && !u->verified)
		return reply_error(r, 400, "Request body exceeds the %lld byte limit", g_server.cfg.max_workspace_bytes);
	if (u->write_errno)
		return reply_error(r, 400, "Cannot stage the upload: %s", strerror(u->write_errno));
	struct sbx_sha256 *h = u->sha;
	u->sha = NULL;
	sbx_sha256_final(h, sha);
	if (u->verified) {
		unsigned long long declared = strtoull(header(r, "x-workspace-size"), NULL, 10);
		if (u->over || u->bytes != declared)
			return reply_error(r, 400, "Verified upload size does not match x-workspace-size");
		if (strcmp(sha, header(r, "x-workspace-sha256")) != 0)
			return reply_error(r, 400, "Verified upload content does not match x-workspace-sha256");
	}
	int dir = remote_workspace(r, query(r, "workspace"), true, &sent);
	if (dir < 0)
		return sent;
	sbx_remote_rel_path(query(r, "path"), rel, sizeof(rel));
	const char *leaf = NULL;
	int parent = sbx_beneath_parent(dir, rel, true, &leaf);
	int saved = errno;
	struct stat st;
	if (parent < 0)
		sent = reply_error(r, 400, "%s", saved == ELOOP || saved == ENOTDIR || saved == EXDEV
							? NO_SYMLINKS : "Remote workspace path cannot be created");
	else if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)))
		sent = S_ISLNK(st.st_mode) ? reply_error(r, 400, "%s", NO_SYMLINKS)
					   : reply_error(r, 400, "Remote workspace path is a directory: %s", rel);
	else if (!within_quota(dir, parent, leaf, u->bytes))
		sent = reply_error(r, 400, "Workspace exceeds the %lld byte quota with this upload (current limit from system "
					  "quota settings / SCIENCE_AGENT_MAX_WORKSPACE_BYTES; set to 0 for unlimited)",
				   g_server.cfg.max_workspace_bytes);
	else
		sent = place(r, u, parent, leaf, rel, sha);
	if (parent >= 0)
		close(parent);
	close(dir);
	return sent;
}

/* The key's tree, removed from its parent's fd without following a
 * symlink at any level; a key already gone is deleted. */
static enum MHD_Result delete_workspace(struct req *r)
{
	char key[SBX_REMOTE_KEY_MAX + 1];
	enum MHD_Result sent;
	if (!clean_key(r, query(r, "workspace"), key, &sent))
		return sent;
	/* Its uid goes back to the range (SBX_UID_RANGE). */
	int ws = sbx_remote_workspace_open(g_server.cfg.data_dir, key, false);
	if (ws >= 0) {
		char registry[PATH_MAX + 32];
		if (sbx_workspace_uid_registry(registry, sizeof(registry)) == 0)
			sbx_workspace_uid_release(registry, ws);
		close(ws);
	}
	if (sbx_remote_workspace_remove(g_server.cfg.data_dir, key) != 0 && errno != ENOENT)
		return errno == ELOOP ? reply_error(r, 400, "%s", NO_SYMLINKS)
				      : reply_error(r, 400, "Cannot delete the remote workspace: %s", strerror(errno));
	return reply_json(r, 200, json_pack("{s:b}", "deleted", 1));
}

enum MHD_Result handle_remote(struct req *r, const char *what, const char *id)
{
	enum MHD_Result sent;
	if (!strcmp(what, "list"))
		return list(r, query(r, "workspace"), NULL);
	if (!strcmp(what, "list-post")) {
		json_t *doc = body_object(r, &sent);
		if (!doc)
			return sent;
		const json_t *paths = json_object_get(doc, "paths");
		sent = list(r, json_string_value(json_object_get(doc, "workspace")), json_is_null(paths) ? NULL : paths);
		json_decref(doc);
		return sent;
	}
	if (!strcmp(what, "read"))
		return read_file(r);
	if (!strcmp(what, "write") || !strcmp(what, "transfer")) {
		if (!r->upload)
			return reply_error(r, 400, "Cannot stage the upload");
		if (r->upload->status)
			return reply_error(r, r->upload->status, "%s", r->upload->error);
		return publish(r, r->upload);
	}
	if (!strcmp(what, "delete"))
		return delete_workspace(r);
	if (!strcmp(what, "snapshot"))
		return remote_snapshot_create(r);
	return remote_snapshot_file(r, id);
}
