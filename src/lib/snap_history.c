/* snap_history.c — a workspace's versions: the ref sbx-run commits it
 * under, its reflog filtered to the directory's own lifetime, and a
 * client's name of a version resolved against it. */
#include "snap_history.h"
#include "snap_store.h"
#include "exitcodes.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int sbx_snap_workspace_ref(int wsfd, char ref[SBX_SNAP_WS_REF_MAX], struct sbx_error *e)
{
	struct stat st;
	if (fstat(wsfd, &st) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "workspace: %s", strerror(errno));
		return -1;
	}
	snprintf(ref, SBX_SNAP_WS_REF_MAX, "ws-%llu-%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	return 0;
}

/* The second the directory was born, or 0 where the filesystem keeps no
 * birth time. */
static time_t birth_of(int wsfd)
{
	struct statx sx;
	if (statx(wsfd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) != 0 || !(sx.stx_mask & STATX_BTIME))
		return 0;
	return (time_t)sx.stx_btime.tv_sec;
}

/* A reflog stamp ("2024-05-01T10:00:00Z") as seconds; -1 when it is not one. */
static time_t stamp_of(const char *at)
{
	struct tm tm = { 0 };
	const char *end = strptime(at, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return end && !*end ? timegm(&tm) : (time_t)-1;
}

json_t *sbx_snap_history(const char *store, int wsfd, struct sbx_error *e)
{
	char ref[SBX_SNAP_WS_REF_MAX], path[PATH_MAX];
	if (sbx_snap_workspace_ref(wsfd, ref, e) != 0)
		return NULL;
	snprintf(path, sizeof(path), "%s/refs/%s.log", store, ref);
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return json_array();
	json_t *log = sbx_snap_log(store, ref, e);
	if (!log)
		return NULL;
	time_t born = birth_of(wsfd);
	json_t *mine = json_array();
	size_t i;
	json_t *row;
	json_array_foreach(log, i, row) {
		if (stamp_of(sbx_json_string_or(row, "at", "")) >= born)
			json_array_append(mine, row);
	}
	json_decref(log);
	return mine;
}

int sbx_snap_history_resolve(const json_t *history, const char *version, char out[72], struct sbx_error *e)
{
	size_t n = json_array_size(history);
	long back = -1;
	if (!strcmp(version, "latest")) {
		back = 0;
	} else if (!strncmp(version, "latest~", 7) && version[7] >= '1' && version[7] <= '9' && strlen(version) <= 13 &&
		   strspn(version + 7, "0123456789") == strlen(version + 7)) {
		back = strtol(version + 7, NULL, 10);
	}
	if (back >= 0 && (size_t)back < n) {
		snprintf(out, 72, "%s", sbx_json_string_or(json_array_get(history, n - 1 - (size_t)back), "digest", ""));
		return 0;
	}
	if (back < 0 && sbx_snap_valid_digest(version)) {
		for (size_t i = 0; i < n; i++)
			if (!strcmp(sbx_json_string_or(json_array_get(history, i), "digest", ""), version)) {
				snprintf(out, 72, "%s", version);
				return 0;
			}
	}
	sbx_error_set(e, SBX_EXIT_USAGE, "unknown-version",
		      "Unknown workspace version '%.80s': not \"latest\", \"latest~N\" or a digest of this workspace's history",
		      version);
	return -1;
}

int sbx_snap_history_drop(const char *store, int wsfd)
{
	char ref[SBX_SNAP_WS_REF_MAX], path[PATH_MAX];
	struct sbx_error e;
	if (sbx_snap_workspace_ref(wsfd, ref, &e) != 0)
		return -1;
	int lock = sbx_snap_lock(store, false, &e);
	if (lock < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/refs/%s", store, ref);
	int rc = unlink(path);
	snprintf(path, sizeof(path), "%s/refs/%s.log", store, ref);
	rc &= unlink(path);
	close(lock);
	return rc;
}
