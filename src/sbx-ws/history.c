/* history.c — a remote workspace's history by key: its versions, a diff
 * of two, a reset to one, forks of one into new keys. sbx-snap does the
 * work on the key's directory fd (and on each new key's, made here and
 * removed again if the fork fails); its answer gets the keys. */
#include "ws.h"
#include "../lib/beneath.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/program_path.h"
#include "../lib/snap_call.h"
#include "../lib/tree_remove.h"
#include "../lib/uuid.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* sbx-snap on the key's fd (and a fork's targets'), with the store and
 * the runs' lease directory of this data dir. */
static json_t *snap_call(const struct ws_opts *o, const char *const *args, const int *fds, size_t n_fds,
			 struct sbx_error *e)
{
	char snap[PATH_MAX], store[PATH_MAX + 32], runs[PATH_MAX + 32];
	if (sbx_sibling_program("sbx-snap", snap, sizeof(snap)) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "no-snap", "sbx-snap not found next to sbx-ws or on PATH");
		return NULL;
	}
	sbx_data_path(o->data, SBX_DATA_VERSIONING, NULL, store, sizeof(store));
	sbx_data_path(o->data, SBX_DATA_RUNNER_EXECUTIONS, "runs", runs, sizeof(runs));
	/* The uid registry sbx-snap allots forks' uids from is this data dir's. */
	setenv("SBX_DATA_DIR", o->data, 1);
	return sbx_snap_call(snap, store, runs, args, fds, n_fds, e);
}

/* versions KEY, diff KEY FROM TO, restore KEY VERSION. */
int ws_history(const struct ws_opts *o, const char *cmd, const char *raw_key, char *const *ops, int n,
	       struct sbx_error *e)
{
	char key[SBX_REMOTE_KEY_MAX + 1], files[24], bytes[24], wait[24];
	int ws = ws_open(o->data, raw_key, false, key, e);
	if (ws < 0)
		return -1;
	snprintf(files, sizeof(files), "%u", o->text_files);
	snprintf(bytes, sizeof(bytes), "%u", o->text_bytes);
	snprintf(wait, sizeof(wait), "%lld", o->lease_wait_ms);
	const char *args[16] = { cmd };
	size_t k = 1;
	for (int i = 0; i < n; i++)
		args[k++] = ops[i];
	if (o->text) {
		const char *more[] = { "--text", "--max-text-files", files, "--max-text-bytes", bytes };
		for (size_t i = 0; i < 5; i++)
			args[k++] = more[i];
	}
	if (strcmp(cmd, "versions") != 0) {
		args[k++] = "--lease-wait-ms";
		args[k++] = wait;
	}
	/* "--" would end sbx-snap's options: versions are never options. */
	for (int i = 0; i < n; i++)
		if (ops[i][0] == '-') {
			close(ws);
			return sbx_error_set(e, SBX_EXIT_USAGE, "unknown-version", "Unknown workspace version '%.80s'", ops[i]), -1;
		}
	json_t *out = snap_call(o, args, &ws, 1, e);
	close(ws);
	if (!out)
		return -1;
	json_object_set_new(out, "workspace", json_string(key));
	return sbx_json_answer(out) == 0 ? 0 : -1;
}

/* The new keys: those named, or count of "<key>-fork-<8 hex>". */
static int fork_keys(const struct ws_opts *o, const char *key, char *const *named, int n,
		     char (*keys)[SBX_REMOTE_KEY_MAX + 1], struct sbx_error *e)
{
	int total = n ? n : (int)o->count;
	if (total < 1 || total > FORK_KEYS_MAX || (n && o->count && o->count != n))
		return sbx_error_set(e, SBX_EXIT_USAGE, "bad-count", "a fork makes 1 to %d workspaces: name them or give --count",
				     FORK_KEYS_MAX), -1;
	for (int i = 0; i < total; i++) {
		char uuid[40], raw[SBX_REMOTE_KEY_MAX + 64];
		sbx_uuid4("", uuid, sizeof(uuid));
		snprintf(raw, sizeof(raw), "%s", n ? named[i] : "");
		if (!n)
			snprintf(raw, sizeof(raw), "%s-fork-%.8s", key, uuid);
		if (!sbx_remote_key(raw, keys[i], SBX_REMOTE_KEY_MAX + 1))
			return sbx_error_set(e, SBX_EXIT_USAGE, "invalid-key", "Invalid remote workspace key"), -1;
		for (int k = 0; k < i; k++)
			if (!strcmp(keys[k], keys[i]))
				return sbx_error_set(e, SBX_EXIT_USAGE, "invalid-key", "a fork's key is named twice"), -1;
	}
	return total;
}

/* A new key's directory, made here (refused when it exists): its fd. */
static int make_key(const struct ws_opts *o, const char *key, struct sbx_error *e)
{
	int root = sbx_remote_workspaces_root(o->data, true), fd = -1;
	const char *leaf;
	int parent = root >= 0 ? sbx_beneath_parent(root, key, true, &leaf) : -1;
	if (parent >= 0 && mkdirat(parent, leaf, 0755) == 0)
		fd = openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int saved = errno;
	if (parent >= 0)
		close(parent);
	if (root >= 0)
		close(root);
	if (fd < 0)
		sbx_error_set(e, SBX_EXIT_USAGE, saved == EEXIST ? WS_CODE_EXISTS : saved == ELOOP ? "symlink" : "unavailable",
			      saved == EEXIST ? "Remote workspace already exists: %.200s"
			      : saved == ELOOP ? "Remote workspace path must not contain symbolic links: %.200s"
					       : "Remote workspace directory cannot be created: %.200s",
			      key);
	return fd;
}

/* fork KEY VERSION [NEWKEY...] (or --count N). */
int ws_fork(const struct ws_opts *o, const char *raw_key, const char *version, char *const *named, int n,
	    struct sbx_error *e)
{
	char key[SBX_REMOTE_KEY_MAX + 1], max[24], wait[24];
	char (*keys)[SBX_REMOTE_KEY_MAX + 1] = calloc(FORK_KEYS_MAX, sizeof(*keys));
	int fds[FORK_KEYS_MAX + 1], made = 0, rc = -1;
	json_t *out = NULL;
	fds[0] = keys ? ws_open(o->data, raw_key, false, key, e) : -1;
	int total = fds[0] >= 0 ? fork_keys(o, key, named, n, keys, e) : -1;
	if (total > 0 && version[0] == '-') {
		sbx_error_set(e, SBX_EXIT_USAGE, "unknown-version", "Unknown workspace version '%.80s'", version);
		total = -1;
	}
	for (; total > 0 && made < total; made++)
		if ((fds[made + 1] = make_key(o, keys[made], e)) < 0)
			break;
	if (total > 0 && made == total) {
		snprintf(max, sizeof(max), "%lld", o->max_bytes);
		snprintf(wait, sizeof(wait), "%lld", o->lease_wait_ms);
		const char *args[] = { "fork", version, "--max-bytes", max, "--lease-wait-ms", wait, NULL };
		out = snap_call(o, args, fds, (size_t)total + 1, e);
	}
	if (out) {
		json_t *forks = json_object_get(out, "forks");
		for (int i = 0; i < total; i++)
			json_object_set_new(json_array_get(forks, (size_t)i), "workspace", json_string(keys[i]));
		json_object_set_new(out, "workspace", json_string(key));
		rc = sbx_json_answer(out) == 0 ? 0 : -1;
	}
	/* A fork that failed leaves no key behind. */
	for (int i = 0; i < made; i++) {
		close(fds[i + 1]);
		if (rc != 0)
			sbx_remote_workspace_remove(o->data, keys[i]);
	}
	if (fds[0] >= 0)
		close(fds[0]);
	free(keys);
	return rc;
}
