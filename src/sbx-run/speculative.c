/* speculative.c — the overlay's directories, its quota and its pending
 * change, around one speculative run. */
#include "run.h"
#include "change_set.h"
#include "pending.h"
#include "../lib/atomic_file.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/quota.h"
#include "../lib/tree_remove.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int made(int dir, const char *name, mode_t mode, struct sbx_error *e)
{
	if (mkdirat(dir, name, mode) != 0 && errno != EEXIST) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "speculative-failed", PENDING_DIR "/%s: %s", name, strerror(errno));
		return -1;
	}
	return 0;
}

int run_speculative_prepare(struct run *r, uid_t uid, gid_t gid, bool as_root, struct sbx_error *e)
{
	struct run_speculative *s = &r->spec;
	struct stat ws;
	/* speculative/ is ours (the workload cannot reach its layers by a
	 * host path); layer/ and all in it are the workload's: it mounts the
	 * overlay itself, in a user namespace of its own (sbx-launch(1)). */
	if (r->job) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-request",
			      "speculative: not in job mode (the execution directory goes when the job ends)");
		return -1;
	}
	int exec = open(r->exec_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	e->code[0] = '\0';
	snprintf(s->xattrs, sizeof(s->xattrs), "user");
	if (exec < 0 || fstat(r->req.ws.fd, &ws) != 0 || made(exec, PENDING_DIR, 0700, e) != 0 ||
	    (s->dir = openat(exec, PENDING_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    made(s->dir, PENDING_LAYER, 0700, e) != 0 ||
	    (s->layer = openat(s->dir, PENDING_LAYER, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		if (exec >= 0)
			close(exec);
		if (strcmp(e->code, "speculative-failed"))
			sbx_error_set(e, SBX_EXIT_INTERNAL, "speculative-failed", PENDING_DIR ": %s", strerror(errno));
		return -1;
	}
	close(exec);
	static const char *const names[] = { "upper", "work", "merged" };
	for (size_t i = 0; i < 3; i++) {
		int fd = made(s->layer, names[i], 0700, e) == 0
				 ? openat(s->layer, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
				 : -1;
		/* upper/ is the merged view's root: the workspace root's mode. */
		if (fd < 0 || (as_root && fchown(fd, uid, gid) != 0) || (i == 0 && fchmod(fd, ws.st_mode & 0777) != 0)) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "speculative-failed", PENDING_DIR "/%s/%s: %s", PENDING_LAYER,
				      names[i], strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		if (i == 0)
			s->upper = fd;
		else
			close(fd);
	}
	if (as_root && fchown(s->layer, uid, gid) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "speculative-failed", PENDING_DIR "/%s: %s", PENDING_LAYER, strerror(errno));
		return -1;
	}
	char ref[32];
	snprintf(ref, sizeof(ref), "fd:%d", s->layer);
	json_object_set_new(r->req.spec, "workspaceOverlay", json_string(ref));
	return 0;
}

/* The room the workspace left (0: no limit); at least one, so a full
 * workspace still refuses the first write rather than none. */
static uint64_t room(uint64_t max, uint64_t used)
{
	return !max ? 0 : max > used ? max - used : 1;
}

enum sbx_quota_state run_speculative_quota(struct run *r, uint64_t *bytes)
{
	struct run_speculative *s = &r->spec;
	uint64_t max_files = r->req.max_workspace_files;
	uint64_t room_bytes = room(r->req.max_workspace_bytes, s->lower_bytes);
	uint64_t room_files = room(max_files, s->lower_names);
	enum sbx_quota_state q = sbx_quota_check_at(s->upper, room_bytes, room_files, bytes);
	*bytes += s->lower_bytes;
	return q;
}

/* The workspace's usage when the run began (called under the lease). */
void run_speculative_measure(struct run *r)
{
	struct sbx_usage u;
	struct sbx_error e;
	if (sbx_quota_usage_capped_at(r->req.ws.fd, r->req.max_workspace_bytes, r->req.max_workspace_files, &u, &e) == 0) {
		r->spec.lower_bytes = u.charged_bytes;
		r->spec.lower_names = u.entries;
		sbx_usage_free(&u);
	}
}

/* The change goes: a run that failed, or whose changes could not be read. */
static void drop(struct run *r, const char *why)
{
	struct run_speculative *s = &r->spec;
	pending_remove_layer(s->dir);
	json_decref(s->report);
	s->report = json_pack("{s:s,s:s,s:s}", "id", r->req.execution_id, "state", "discarded", "reason", why);
}

/* The first n entries of list, while their paths fit the result's bytes. */
static json_t *head(json_t *list, size_t n)
{
	json_t *out = json_array();
	size_t bytes = 0;
	for (size_t i = 0; i < n && i < json_array_size(list); i++) {
		json_t *x = json_array_get(list, i);
		bytes += json_string_length(json_object_get(x, "path"));
		if (bytes > SPECULATIVE_RESULT_PATH_BYTES)
			break;
		json_array_append(out, x);
	}
	return out;
}

void run_speculative_finish(struct run *r)
{
	struct run_speculative *s = &r->spec;
	struct sbx_error e;
	if (s->dir < 0)
		return;
	if (!r->ran || r->exit_code) {
		drop(r, r->ran ? "the run ended with a failure class: nothing of it is kept" : "the workload never ran");
		return;
	}
	json_t *set = change_set_read(s->upper, s->xattrs, &r->before, r->req.ws.fd,
				      room(r->req.max_workspace_bytes, s->lower_bytes), &e);
	struct stat ws;
	int exec = open(r->exec_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char *text = set ? json_dumps(set, JSON_COMPACT) : NULL;
	if (!set || exec < 0 || fstat(r->req.ws.fd, &ws) != 0 ||
	    (text && sbx_atomic_write_at(exec, "changes.json", text, strlen(text), 0600, &e) != 0) || !text) {
		if (set && !text)
			sbx_error_set(&e, SBX_EXIT_INTERNAL, "out-of-memory", "the change set: out of memory");
		else if (set && exec < 0)
			sbx_error_set(&e, SBX_EXIT_INTERNAL, "speculative-failed", "%s: %s", r->exec_dir, strerror(errno));
		drop(r, e.message);
		r->exit_code = e.exit_code ? e.exit_code : SBX_EXIT_INTERNAL;
		snprintf(r->error, sizeof(r->error), "%s", e.message);
		json_decref(set);
		free(text);
		if (exec >= 0)
			close(exec);
		return;
	}
	free(text);
	char fingerprint[72], at[SBX_ISO_TIME_SIZE], expires[SBX_ISO_TIME_SIZE], changes[PATH_MAX + 300];
	long long now = sbx_wall_ms(), until = now + r->req.speculative_keep_s * 1000;
	pending_fingerprint(&r->before, fingerprint);
	sbx_iso_time(now, at);
	sbx_iso_time(until, expires);
	snprintf(changes, sizeof(changes), "%s/changes.json", r->exec_dir);
	json_t *record = json_pack("{s:i,s:s,s:s,s:I,s:I,s:s,s:s,s:s,s:s,s:I,s:s,s:O,s:O}", "version", 1,
				   "executionId", r->req.execution_id, "workspace", r->req.workspace, "workspaceDev",
				   (json_int_t)ws.st_dev, "workspaceIno", (json_int_t)ws.st_ino, "fingerprint", fingerprint,
				   "xattrs", s->xattrs, "createdAt", at, "expiresAt", expires, "expiresAtMs",
				   (json_int_t)until, "state", "pending", "counts", json_object_get(set, "counts"), "bytes",
				   json_object_get(set, "bytes"));
	if (pending_write(exec, record, &e) != 0) {
		drop(r, e.message);
	} else {
		json_t *list = json_object_get(set, "changes"), *listed = head(list, SPECULATIVE_RESULT_CHANGES);
		s->report = json_pack("{s:s,s:s,s:s,s:O,s:O,s:o,s:b,s:o,s:s}", "id", r->req.execution_id, "state", "pending",
				      "expiresAt", expires, "counts", json_object_get(set, "counts"), "bytes",
				      json_object_get(set, "bytes"), "changes", listed,
				      "changesTruncated", json_array_size(list) > json_array_size(listed), "skipped",
				      head(json_object_get(set, "skipped"), 1000), "changesFile", changes);
	}
	json_decref(record);
	json_decref(set);
	close(exec);
}

void run_speculative_close(struct run_speculative *s)
{
	int *fds[] = { &s->upper, &s->layer, &s->dir };
	for (size_t i = 0; i < 3; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	json_decref(s->report);
	s->report = NULL;
}
