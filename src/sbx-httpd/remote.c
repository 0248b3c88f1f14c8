/* remote.c — the remote workspace endpoints (runner-api 4 rows 30-38,
 * 5.7) as sbx-ws children: sbx-httpd checks the request's shape and the
 * key and path grammars, the stage does every filesystem operation beneath
 * the key's fd. A file read comes back as an open fd over a socket
 * (SCM_RIGHTS) and is sent from that fd (reply_file): no name is opened
 * twice. An upload's staged file goes to the stage as an fd. */
#include "remote.h"
#include "server.h"
#include "reply.h"
#include "body.h"
#include "upload.h"
#include "metrics.h"
#include "../lib/hash.h"
#include "collect.h"
#include "ws_call.h"
#include "../lib/fd_pass.h"
#include "../lib/remote_path.h"
#include "../lib/stage_call.h"
#include "../lib/strvec.h"

#include <jansson.h>
#include <stdbool.h>
#include <microhttpd.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATHS_MAX 50
#define RAW_PATH_MAX 65536      /* longer can never trim to a valid path */

/* The stage's refusal as the API has it: 409 for a path that changed while
 * it was opened and a plain upload's collision, 400 for the rest. */
static enum MHD_Result reply_stage_error(struct req *r, const struct sbx_error *e, bool verified)
{
	bool conflict = (!strcmp(e->code, "exists") && !verified) || !strcmp(e->code, "changed");
	return reply_error(r, conflict ? 409 : 400, "%s", e->message);
}

static bool clean_key(struct req *r, const char *raw, char key[SBX_REMOTE_KEY_MAX + 1], enum MHD_Result *sent)
{
	if (sbx_remote_key(raw, key, SBX_REMOTE_KEY_MAX + 1))
		return true;
	*sent = reply_error(r, 400, "Invalid remote workspace key");
	return false;
}

/* A request's paths (null: all) as clean relative paths, or false with a
 * 400 sent. */
static bool clean_paths(struct req *r, const json_t *paths, char (*clean)[SBX_REMOTE_PATH_MAX + 1], size_t *n,
			enum MHD_Result *sent)
{
	*n = 0;
	if (!paths || json_is_null(paths))
		return true;
	if (!json_is_array(paths) || json_array_size(paths) > PATHS_MAX) {
		*sent = reply_error(r, 400, "paths must be an array of at most %d workspace paths", PATHS_MAX);
		return false;
	}
	size_t i;
	json_t *p;
	json_array_foreach(paths, i, p) {
		if (!sbx_remote_rel_path(json_string_value(p), clean[i], SBX_REMOTE_PATH_MAX + 1)) {
			*sent = reply_error(r, 400, "Invalid remote workspace path");
			return false;
		}
	}
	*n = json_array_size(paths);
	return true;
}

/* ls or snapshot of the key, the paths (null: all) selecting. */
static enum MHD_Result selection_call(struct req *r, const char *cmd, const char *raw_key, const json_t *paths,
				      unsigned status)
{
	enum MHD_Result sent;
	char key[SBX_REMOTE_KEY_MAX + 1];
	size_t n;
	char (*clean)[SBX_REMOTE_PATH_MAX + 1] = malloc(PATHS_MAX * sizeof(*clean));
	const char *list[PATHS_MAX];
	if (!clean)
		return reply_error(r, 500, "out of memory");
	if (!clean_paths(r, paths, clean, &n, &sent) || !clean_key(r, raw_key, key, &sent)) {
		free(clean);
		return sent;
	}
	for (size_t i = 0; i < n; i++)
		list[i] = clean[i];
	bool only = paths && !json_is_null(paths);
	struct ws_call c = { .opts = { cmd, only ? "--only" : NULL }, .key = key, .paths = list, .n_paths = n, .fd = -1 };
	struct sbx_error e;
	json_t *out = ws_call_run(&c, &e);
	free(clean);
	if (!out)
		return reply_stage_error(r, &e, false);
	if (!strcmp(cmd, "snapshot"))
		collect_kick(COLLECT_SNAPSHOTS); /* the key may now hold more than it keeps */
	return reply_json(r, status, out);
}

/* cat or snapshot-cat: the stage opens the file and hands its fd over. */
static enum MHD_Result serve_call(struct req *r, const char *cmd, const char *key, const char *id, const char *path)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return reply_error(r, 500, "Cannot read the remote workspace: %s", strerror(errno));
	const char *operands[2] = { id ? id : path, path };
	struct ws_call c = { .opts = { cmd, "--fd-socket", "3" }, .key = key, .paths = operands, .n_paths = id ? 2 : 1,
			     .fd = sv[1] };
	struct sbx_error e;
	json_t *out = ws_call_run(&c, &e);
	close(sv[1]);
	int fd = out ? sbx_fd_recv(sv[0]) : -1;
	close(sv[0]);
	json_decref(out);
	if (!out)
		return reply_stage_error(r, &e, false);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return reply_error(r, 500, "sbx-ws handed over no file");
	}
	return reply_file(r, fd, st.st_size);
}

/* A raw query value as the stage's operand ("" when absent; one too long
 * to ever be valid is refused here: it would not fit an argument). */
static const char *operand(const char *raw)
{
	return !raw ? "" : strlen(raw) > RAW_PATH_MAX ? NULL : raw;
}

static enum MHD_Result read_file(struct req *r)
{
	enum MHD_Result sent;
	char key[SBX_REMOTE_KEY_MAX + 1];
	if (!clean_key(r, query(r, "workspace"), key, &sent))
		return sent;
	const char *path = operand(query(r, "path"));
	return path ? serve_call(r, "cat", key, NULL, path) : reply_error(r, 400, "Invalid remote workspace path");
}

static enum MHD_Result snapshot_file(struct req *r, const char *id)
{
	char key[SBX_REMOTE_KEY_MAX + 1], rel[SBX_REMOTE_PATH_MAX + 1];
	if (!sbx_remote_key(query(r, "workspace"), key, sizeof(key)))
		return reply_error(r, 400, "Invalid remote workspace key");
	if (!sbx_remote_rel_path(query(r, "path"), rel, sizeof(rel)))
		return reply_error(r, 400, "Invalid remote workspace path");
	return serve_call(r, "snapshot-cat", key, id, rel);
}

/* The staged upload, checked here (size, hash: both known as it streamed
 * in), handed to the stage as an fd to publish after its own checks. */
static enum MHD_Result publish(struct req *r, struct upload *u)
{
	char key[SBX_REMOTE_KEY_MAX + 1], rel[SBX_REMOTE_PATH_MAX + 1], sha[SBX_SHA256_HEX_LEN + 1], msg[600], mode[8];
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
	sbx_remote_key(query(r, "workspace"), key, sizeof(key));
	sbx_remote_rel_path(query(r, "path"), rel, sizeof(rel));
	bool overwrite = query(r, "conflict") && !strcmp(query(r, "conflict"), "overwrite");
	long exec = u->verified ? upload_exec_bits(header(r, "x-workspace-executable")) : 0;
	snprintf(mode, sizeof(mode), "%o", (unsigned)(0644 | (exec & 0111)));
	const char *operands[1] = { rel };
	struct ws_call c = { .opts = { "put", "--from-fd", "3", "--mode", mode, overwrite ? "--overwrite" : NULL },
			     .key = key, .paths = operands, .n_paths = 1, .fd = u->fd };
	struct sbx_error e;
	json_t *out = ws_call_run(&c, &e);
	if (!out)
		return reply_stage_error(r, &e, u->verified);
	metrics_add(METRICS_UPLOADS_STORED, 1);
	metrics_add(METRICS_UPLOAD_STORED_BYTES, u->bytes);
	if (u->verified)
		json_object_set_new(out, "sha256", json_string(sha));
	return reply_json(r, 201, out);
}

static enum MHD_Result delete_workspace(struct req *r)
{
	char key[SBX_REMOTE_KEY_MAX + 1];
	enum MHD_Result sent;
	if (!clean_key(r, query(r, "workspace"), key, &sent))
		return sent;
	struct ws_call c = { .opts = { "rm" }, .key = key, .fd = -1 };
	struct sbx_error e;
	json_t *out = ws_call_run(&c, &e);
	return out ? reply_json(r, 200, out) : reply_stage_error(r, &e, false);
}

enum MHD_Result handle_remote(struct req *r, const char *what, const char *id)
{
	enum MHD_Result sent;
	if (!strcmp(what, "list"))
		return selection_call(r, "ls", query(r, "workspace"), NULL, 200);
	if (!strcmp(what, "list-post") || !strcmp(what, "snapshot")) {
		json_t *doc = body_object(r, &sent);
		if (!doc)
			return sent;
		bool list = !strcmp(what, "list-post");
		sent = selection_call(r, list ? "ls" : "snapshot", json_string_value(json_object_get(doc, "workspace")),
				      json_object_get(doc, "paths"), list ? 200 : 201);
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
	return snapshot_file(r, id);
}
