/* remote.c — remote workspaces (runner-api 4 rows 32-36, 5.7): keys made
 * on demand as real directories, listings, reads that resolve and stay
 * inside, and uploads published only after every check: size and hash
 * (verified), quota, then a link (reject: atomic against a concurrent
 * creator) or a rename (overwrite) into a parent walked without symlinks. */
#include "httpd.h"
#include "../lib/path.h"
#include "../lib/quota.h"
#include "../lib/remote_path.h"
#include "../lib/snap_scan.h"
#include "../lib/tree_remove.h"

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

bool remote_workspace(struct req *r, const char *raw, bool create, char *dir, size_t size, enum MHD_Result *sent)
{
	char key[SBX_REMOTE_KEY_MAX + 1];
	if (!sbx_remote_key(raw, key, sizeof(key))) {
		*sent = reply_error(r, 400, "Invalid remote workspace key");
		return false;
	}
	if (sbx_remote_workspace_dir(g_server.cfg.data_dir, key, create, dir, size) != 0) {
		*sent = errno == ELOOP ? reply_error(r, 400, "Remote workspace path must not contain symbolic links")
		      : errno == ENOENT ? reply_error(r, 400, "Remote workspace does not exist")
					  : reply_error(r, 400, "Remote workspace is unavailable: %s", strerror(errno));
		return false;
	}
	return true;
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
	char dir[PATH_MAX];
	enum MHD_Result sent;
	struct sbx_snap_scan scan = { 0 };
	struct sbx_error e;
	json_t *clean;
	if (!remote_paths(r, paths, &clean, &sent))
		return sent;
	bool found = remote_workspace(r, raw_key, true, dir, sizeof(dir), &sent);
	if (!found || sbx_snap_scan(dir, &scan, &e) != 0) {
		json_decref(clean);
		return found ? reply_error(r, 400, "%s", e.message) : sent;
	}
	json_t *out = json_array();
	for (size_t i = 0; i < scan.len; i++)
		if (scan.v[i].type == SBX_ENTRY_FILE && remote_selected(scan.v[i].path, clean))
			json_array_append_new(out, file_entry(&scan.v[i]));
	sbx_snap_scan_free(&scan);
	json_decref(clean);
	return reply_json(r, 200, out);
}

/* A read resolves symlinks, and what it reaches must stay inside. */
static int open_for_read(struct req *r, const char *dir, const char *raw_path, struct stat *st, enum MHD_Result *sent)
{
	char rel[SBX_REMOTE_PATH_MAX + 1], joined[PATH_MAX * 2], real[PATH_MAX], root[PATH_MAX];
	if (!sbx_remote_rel_path(raw_path, rel, sizeof(rel))) {
		*sent = reply_error(r, 400, "Invalid remote workspace path");
		return -1;
	}
	snprintf(joined, sizeof(joined), "%s/%s", dir, rel);
	if (!realpath(dir, root) || !realpath(joined, real)) {
		*sent = reply_error(r, 400, "Remote workspace file not found: %s", rel);
		return -1;
	}
	if (!sbx_path_is_within(root, real) || !strcmp(root, real)) {
		*sent = reply_error(r, 400, "Remote workspace path escapes the workspace: %s", rel);
		return -1;
	}
	int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		if (fd >= 0)
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
	char dir[PATH_MAX];
	enum MHD_Result sent;
	struct stat st;
	if (!remote_workspace(r, query(r, "workspace"), true, dir, sizeof(dir), &sent))
		return sent;
	int fd = open_for_read(r, dir, query(r, "path"), &st, &sent);
	return fd < 0 ? sent : reply_file(r, fd, st.st_size);
}

/* What the upload would make the workspace hold, against the quota. */
static bool within_quota(const char *dir, int parent, const char *leaf, unsigned long long incoming)
{
	long long max = g_server.cfg.max_workspace_bytes;
	struct sbx_usage u;
	struct sbx_error e;
	struct stat st;
	if (max <= 0)
		return true;
	if (sbx_quota_usage(dir, &u, &e) != 0)
		return false;
	unsigned long long total = u.bytes;
	sbx_usage_free(&u);
	if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
		total -= (unsigned long long)st.st_size < total ? (unsigned long long)st.st_size : total;
	return total + incoming <= (unsigned long long)max;
}

static enum MHD_Result publish(struct req *r, struct upload *u)
{
	char dir[PATH_MAX], rel[SBX_REMOTE_PATH_MAX + 1], sha[SBX_SHA256_HEX_LEN + 1], msg[600];
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
	if (!remote_workspace(r, query(r, "workspace"), true, dir, sizeof(dir), &sent))
		return sent;
	sbx_remote_rel_path(query(r, "path"), rel, sizeof(rel));
	bool overwrite = query(r, "conflict") && !strcmp(query(r, "conflict"), "overwrite");
	long exec = u->verified && header(r, "x-workspace-executable") ? strtol(header(r, "x-workspace-executable"), NULL, 10) : 0;
	if (fchmod(u->fd, (mode_t)(0644 | (exec & 0111))) != 0 || fsync(u->fd) != 0)
		return reply_error(r, 400, "Cannot stage the upload: %s", strerror(errno));

	int root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	const char *leaf = NULL;
	int parent = root < 0 ? -1 : sbx_beneath_parent(root, rel, true, &leaf);
	int saved = errno;
	if (root >= 0)
		close(root);
	if (parent < 0)
		return reply_error(r, 400, "%s", saved == ELOOP || saved == ENOTDIR || saved == EXDEV
							 ? "Remote workspace path must not contain symbolic links"
							 : "Remote workspace path cannot be created");
	struct stat st;
	enum MHD_Result rc;
	bool exists = fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && S_ISLNK(st.st_mode))
		rc = reply_error(r, 400, "Remote workspace path must not contain symbolic links");
	else if (exists && S_ISDIR(st.st_mode))
		rc = reply_error(r, 400, "Remote workspace path is a directory: %s", rel);
	else if (!within_quota(dir, parent, leaf, u->bytes))
		rc = reply_error(r, 400, "Workspace exceeds the %lld byte quota with this upload (current limit from system "
					"quota settings / SCIENCE_AGENT_MAX_WORKSPACE_BYTES; set to 0 for unlimited)",
				 g_server.cfg.max_workspace_bytes);
	else if (!overwrite && linkat(AT_FDCWD, u->tmp, parent, leaf, 0) != 0)
		/* A plain upload's collision is 409, a verified one's 400. */
		rc = errno == EEXIST ? reply_error(r, u->verified ? 400 : 409, "Remote workspace file already exists")
				     : reply_error(r, 400, "Cannot publish the upload: %s", strerror(errno));
	else if (overwrite && renameat(AT_FDCWD, u->tmp, parent, leaf) != 0)
		rc = reply_error(r, 400, "Cannot publish the upload: %s", strerror(errno));
	else {
		fsync(parent);
		json_t *body = json_pack("{s:s,s:I}", "path", rel, "size", (json_int_t)u->bytes);
		if (u->verified)
			json_object_set_new(body, "sha256", json_string(sha));
		rc = reply_json(r, 201, body);
	}
	close(parent);
	return rc;
}

static enum MHD_Result delete_workspace(struct req *r)
{
	char dir[PATH_MAX];
	enum MHD_Result sent;
	if (!remote_workspace(r, query(r, "workspace"), true, dir, sizeof(dir), &sent))
		return sent;
	if (sbx_remove_tree(dir) != 0 && errno != ENOENT)
		return reply_error(r, 400, "Cannot delete the remote workspace: %s", strerror(errno));
	return reply_json(r, 200, json_pack("{s:b}", "deleted", 1));
}

enum MHD_Result remote_snapshot_create(struct req *r);
enum MHD_Result remote_snapshot_file(struct req *r, const char *id);

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
