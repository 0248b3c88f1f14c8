/* workspace.c — a remote workspace by key: opened once beneath
 * <data>/remote-workspaces with no symlink on the way, the request's paths
 * checked against the grammar, and the whole key removed (rm). */
#include "ws.h"
#include "../lib/exitcodes.h"
#include "../lib/snap_history.h"
#include "../lib/tree_remove.h"
#include "../lib/workspace_uid.h"
#include "../lib/datadir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int ws_open(const char *data, const char *raw_key, bool create, char key[SBX_REMOTE_KEY_MAX + 1],
	    struct sbx_error *e)
{
	if (!sbx_remote_key(raw_key, key, SBX_REMOTE_KEY_MAX + 1)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "invalid-key", "Invalid remote workspace key");
		return -1;
	}
	int fd = sbx_remote_workspace_open(data, key, create);
	if (fd < 0) {
		if (errno == ELOOP)
			sbx_error_set(e, SBX_EXIT_USAGE, "symlink", "Remote workspace path must not contain symbolic links");
		else if (errno == ENOENT)
			sbx_error_set(e, SBX_EXIT_USAGE, "not-found", "Remote workspace does not exist");
		else
			sbx_error_set(e, SBX_EXIT_USAGE, "unavailable", "Remote workspace is unavailable: %s", strerror(errno));
	}
	return fd;
}

bool ws_rel_path(const char *raw, char rel[SBX_REMOTE_PATH_MAX + 1], struct sbx_error *e)
{
	if (sbx_remote_rel_path(raw, rel, SBX_REMOTE_PATH_MAX + 1))
		return true;
	sbx_error_set(e, SBX_EXIT_USAGE, "invalid-path", "Invalid remote workspace path");
	return false;
}

json_t *ws_selection(char *const *paths, int n, bool only, struct sbx_error *e)
{
	if (n > WS_PATHS_MAX) {
		sbx_error_set(e, SBX_EXIT_USAGE, "too-many-paths", "paths must be an array of at most %d workspace paths",
			      WS_PATHS_MAX);
		return NULL;
	}
	if (!n && !only)
		return json_null();
	json_t *clean = json_array();
	for (int i = 0; i < n; i++) {
		char rel[SBX_REMOTE_PATH_MAX + 1];
		if (!ws_rel_path(paths[i], rel, e)) {
			json_decref(clean);
			return NULL;
		}
		json_array_append_new(clean, json_string(rel));
	}
	return clean;
}

bool ws_selected(const char *path, const json_t *clean)
{
	size_t i;
	json_t *p;
	if (!json_is_array(clean))
		return true;
	json_array_foreach(clean, i, p) {
		const char *rel = json_string_value(p);
		size_t n = strlen(rel);
		if (!strcmp(path, rel) || (!strncmp(path, rel, n) && path[n] == '/'))
			return true;
	}
	return false;
}

int sbx_remote_workspace_remove(const char *data_dir, const char *key)
{
	int root = sbx_remote_workspaces_root(data_dir, false);
	if (root < 0)
		return -1;
	int rc = sbx_remove_tree_beneath(root, key);
	int saved = errno;
	close(root);
	errno = saved;
	return rc;
}

/* rm KEY: the key's tree, removed from its parent's fd without following
 * a symlink at any level, its uid given back to the range; a key already
 * gone is deleted. rm KEY PATH: that file or tree below the key. */
int ws_rm(const struct ws_opts *o, const char *raw_key, const char *path, struct sbx_error *e)
{
	char key[SBX_REMOTE_KEY_MAX + 1], rel[SBX_REMOTE_PATH_MAX + 1];
	if (path) {
		if (!ws_rel_path(path, rel, e))
			return -1;
		int ws = ws_open(o->data, raw_key, false, key, e);
		if (ws < 0)
			return -1;
		int rc = sbx_remove_tree_beneath(ws, rel);
		int saved = errno;
		close(ws);
		if (rc != 0 && saved != ENOENT) {
			if (saved == ELOOP || saved == ENOTDIR)
				sbx_error_set(e, SBX_EXIT_USAGE, "symlink", "Remote workspace path must not contain symbolic links");
			else
				sbx_error_set(e, SBX_EXIT_USAGE, "remove", "Cannot delete the remote workspace path: %s",
					      strerror(saved));
			return -1;
		}
		printf("{\"deleted\":%s}\n", rc == 0 ? "true" : "false");
		return 0;
	}
	if (!sbx_remote_key(raw_key, key, sizeof(key))) {
		sbx_error_set(e, SBX_EXIT_USAGE, "invalid-key", "Invalid remote workspace key");
		return -1;
	}
	/* Its uid goes back to the range (SBX_UID_RANGE), and its history
	 * goes: a later key whose directory gets the inode starts afresh. */
	int ws = sbx_remote_workspace_open(o->data, key, false);
	if (ws >= 0) {
		char registry[PATH_MAX + 32], store[PATH_MAX + 32];
		if (sbx_data_path(o->data, SBX_DATA_WORKSPACE_UIDS, NULL, registry, sizeof(registry)) == 0)
			sbx_workspace_uid_release(registry, ws);
		if (sbx_data_path(o->data, SBX_DATA_VERSIONING, NULL, store, sizeof(store)) == 0)
			sbx_snap_history_drop(store, ws);
		close(ws);
	}
	if (sbx_remote_workspace_remove(o->data, key) != 0 && errno != ENOENT) {
		if (errno == ELOOP)
			sbx_error_set(e, SBX_EXIT_USAGE, "symlink", "Remote workspace path must not contain symbolic links");
		else
			sbx_error_set(e, SBX_EXIT_USAGE, "remove", "Cannot delete the remote workspace: %s", strerror(errno));
		return -1;
	}
	printf("{\"deleted\":true}\n");
	return 0;
}
