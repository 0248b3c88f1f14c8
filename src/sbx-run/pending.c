/* pending.c — the pending change's record, its lock and its end. */
#include "pending.h"
#include "../lib/atomic_file.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/tree_remove.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void pending_fingerprint(const struct sbx_snap_scan *s, char out[72])
{
	char hex[65], line[128];
	struct sbx_sha256 *h = sbx_sha256_new();
	for (size_t i = 0; h && i < s->len; i++) {
		const struct sbx_snap_entry *x = &s->v[i];
		sbx_sha256_update(h, x->path, strlen(x->path) + 1);
		int n = snprintf(line, sizeof(line), "%c %d %" PRIu64 " %" PRId64 " %" PRIu64, x->type, x->exec, x->size,
				 x->mtime_ns, x->ino);
		sbx_sha256_update(h, line, (size_t)n + 1);
		if (x->target)
			sbx_sha256_update(h, x->target, strlen(x->target) + 1);
	}
	if (!h) {
		snprintf(out, 72, "sha256:unknown");
		return;
	}
	sbx_sha256_final(h, hex);
	snprintf(out, 72, "sha256:%s", hex);
}

int pending_lock(const char *exec_dir, bool wait, struct sbx_error *e)
{
	int fd = open(exec_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, errno == ENOENT ? "not-found" : "bad-path", "%.800s: %s", exec_dir,
			      strerror(errno));
		return -1;
	}
	while (flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) {
		if (errno == EINTR)
			continue;
		int err = errno;
		sbx_error_set(e, SBX_EXIT_INTERNAL, "locked", "%.800s: flock: %s", exec_dir, strerror(err));
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

json_t *pending_read(int dirfd, struct sbx_error *e)
{
	int fd = openat(dirfd, PENDING_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "not-speculative", "no pending change here (the run was not speculative)");
		return NULL;
	}
	size_t len;
	char *text = sbx_read_fd_capped(fd, PENDING_RECORD_MAX, &len, PENDING_FILE, e);
	close(fd);
	json_t *doc = text ? sbx_json_parse(text, len, PENDING_FILE, e) : NULL;
	free(text);
	if (doc && (!json_is_string(json_object_get(doc, "state")) || !json_is_string(json_object_get(doc, "xattrs")))) {
		json_decref(doc);
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "bad-record", PENDING_FILE ": not a pending change's record");
		return NULL;
	}
	return doc;
}

int pending_write(int dirfd, json_t *doc, struct sbx_error *e)
{
	char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	int rc = text ? sbx_atomic_write_at(dirfd, PENDING_FILE, text, strlen(text), 0600, e) : -1;
	if (!text)
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", PENDING_FILE ": out of memory");
	free(text);
	return rc;
}

int pending_remove_layer(int speculative_dir)
{
	struct stat st;
	int work = openat(speculative_dir, PENDING_LAYER "/work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (work >= 0 && fstatat(work, "work", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
		if (fchmodat(work, "work", 0700, 0) != 0)
			errno = 0; /* the removal below says why it failed */
	if (work >= 0)
		close(work);
	return sbx_remove_tree_at(speculative_dir, PENDING_LAYER) != 0 && errno != ENOENT ? -1 : 0;
}

int pending_close(int dirfd, json_t *doc, const char *state, struct sbx_error *e)
{
	char at[SBX_ISO_TIME_SIZE];
	int spec = openat(dirfd, PENDING_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (spec >= 0) {
		if (pending_remove_layer(spec) != 0) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "remove-failed", PENDING_DIR "/" PENDING_LAYER ": %s", strerror(errno));
			close(spec);
			return -1;
		}
		close(spec);
	}
	if (sbx_remove_tree_at(dirfd, PENDING_DIR) != 0 && errno != ENOENT) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "remove-failed", PENDING_DIR ": %s", strerror(errno));
		return -1;
	}
	sbx_iso_time(sbx_wall_ms(), at);
	json_object_set_new(doc, "state", json_string(state));
	json_object_set_new(doc, "endedAt", json_string(at));
	return pending_write(dirfd, doc, e);
}

bool pending_expired(const json_t *doc, long long now_ms)
{
	const char *state = json_string_value(json_object_get(doc, "state"));
	return state && !strcmp(state, "pending") && json_integer_value(json_object_get(doc, "expiresAtMs")) <= now_ms;
}
