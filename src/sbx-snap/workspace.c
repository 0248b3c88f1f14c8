/* workspace.c — the workspace a history command is about (a path or an
 * fd its caller opened), its versions, a version the caller names, and
 * its lease (sbx-run's, waited for a bounded time). */
#include "snap.h"
#include "../lib/datadir.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/snap_history.h"
#include "../lib/workspace_lease.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int snap_workspace_open(const struct args *a, struct sbx_error *e)
{
	struct stat st;
	int fd = a->workspace ? open(a->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
			      : openat(a->workspace_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "%s: %s", a->workspace ? a->workspace : "--workspace-fd",
			      strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

json_t *snap_versions(const struct args *a, struct sbx_error *e)
{
	char ref[SBX_SNAP_WS_REF_MAX];
	int fd = snap_workspace_open(a, e);
	if (fd < 0)
		return NULL;
	json_t *h = sbx_snap_workspace_ref(fd, ref, e) == 0 ? sbx_snap_history(a->store, fd, e) : NULL;
	close(fd);
	if (!h)
		return NULL;
	json_t *last = json_array_get(h, json_array_size(h) - 1);
	return json_pack("{s:s,s:o,s:O}", "ref", ref, "versions", h, "latest",
			 last ? json_object_get(last, "digest") : json_null());
}

int snap_lease(const struct args *a, int wsfd, struct sbx_error *e)
{
	char state[PATH_MAX], data[PATH_MAX];
	if (a->state_dir)
		snprintf(state, sizeof(state), "%s", a->state_dir);
	else if (sbx_data_dir(data, sizeof(data)) != 0 ||
		 sbx_data_path(data, SBX_DATA_EXECUTIONS, NULL, state, sizeof(state)) != 0)
		return sbx_error_set(e, SBX_EXIT_USAGE, "path-too-long", "data directory path too long"), -1;
	/* A run holds the lease for as long as it runs: wait a bounded time. */
	return sbx_lease_take_within(state, wsfd, a->lease_wait_ms, e);
}

json_t *snap_commit_workspace(const struct args *a, int wsfd, struct sbx_error *e)
{
	char ref[SBX_SNAP_WS_REF_MAX];
	if (sbx_snap_workspace_ref(wsfd, ref, e) != 0)
		return NULL;
	return sbx_snap_commit_scanned(wsfd, a->store, ref, NULL, a->max_manifest, e);
}

int snap_version(const struct args *a, int wsfd, const char *version, char digest[72], struct sbx_error *e)
{
	if (!strcmp(version, "live")) {
		int lease = snap_lease(a, wsfd, e);
		if (lease < 0)
			return -1;
		json_t *receipt = snap_commit_workspace(a, wsfd, e);
		close(lease);
		if (!receipt)
			return -1;
		snprintf(digest, 72, "%s", sbx_json_string_or(receipt, "digest", ""));
		json_decref(receipt);
		return 0;
	}
	json_t *h = sbx_snap_history(a->store, wsfd, e);
	int rc = h ? sbx_snap_history_resolve(h, version, digest, e) : -1;
	json_decref(h);
	return rc;
}
