/* object_check.c — the store's objects a manifest names, each hashed
 * against its digest once: one at a time as they are used, or all of them
 * on a thread of their own beside the cloning (a fork: nothing it made is
 * kept unless every object checked out, so the check need not come
 * first, and a clone that reads no byte is not held up by the hashing). */
#include "snap.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"
#include "../lib/json.h"
#include "../lib/map.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_BUF (256 * 1024)

int snap_object_matches(int fd, const char *digest, char *buf, size_t size)
{
	struct sbx_sha256 *md = sbx_sha256_new();
	char hex[SBX_SHA256_HEX_LEN + 1];
	off_t off = 0;
	if (!md)
		return errno = ENOMEM, -1;
	for (ssize_t n; (n = pread(fd, buf, size, off)) != 0; off += n) {
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n < 0) {
			sbx_sha256_free(md);
			return -1;
		}
		sbx_sha256_update(md, buf, (size_t)n);
	}
	sbx_sha256_final(md, hex);
	return strcmp(hex, digest + 7) == 0;
}

struct object_check {
	const char *store;
	const json_t *entries;
	pthread_t thread;
	int code;             /* 0, or the exit code of the first failure */
	char what[600];
};

static void *check_all(void *arg)
{
	struct object_check *c = arg;
	struct sbx_map seen;
	char *buf = malloc(CHECK_BUF), obj[PATH_MAX];
	size_t i;
	json_t *row;
	sbx_map_init(&seen);
	if (!buf) {
		c->code = SBX_EXIT_INTERNAL;
		snprintf(c->what, sizeof(c->what), "out of memory");
	}
	json_array_foreach(c->entries, i, row) {
		const char *digest = sbx_json_string_or(row, "digest", "");
		if (c->code || strcmp(sbx_json_string_or(row, "type", ""), "file") != 0 || !sbx_snap_valid_digest(digest) ||
		    sbx_map_has(&seen, digest, strlen(digest)))
			continue;
		sbx_map_put(&seen, digest, strlen(digest), NULL, NULL);
		sbx_snap_object_path(c->store, digest, obj, sizeof(obj));
		int fd = open(obj, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		int ok = fd >= 0 ? snap_object_matches(fd, digest, buf, CHECK_BUF) : -1;
		if (ok != 1) {
			c->code = ok == 0 ? SBX_EXIT_INTEGRITY : SBX_EXIT_INTERNAL;
			snprintf(c->what, sizeof(c->what), "%.300s: %s", sbx_json_string_or(row, "path", ""),
				 ok == 0 ? "the stored content does not match its digest" : strerror(errno));
		}
		if (fd >= 0)
			close(fd);
	}
	sbx_map_free(&seen, NULL);
	free(buf);
	return NULL;
}

struct object_check *snap_check_start(const char *store, const json_t *entries)
{
	struct object_check *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->store = store;
	c->entries = entries; /* read only, by both threads */
	if (pthread_create(&c->thread, NULL, check_all, c) != 0) {
		free(c);
		return NULL;
	}
	return c;
}

int snap_check_finish(struct object_check *c, struct sbx_error *e)
{
	if (!c) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "check", "cannot start the objects' check");
		return -1;
	}
	pthread_join(c->thread, NULL);
	int rc = c->code ? -1 : 0;
	if (rc)
		sbx_error_set(e, c->code, c->code == SBX_EXIT_INTEGRITY ? "corrupt-object" : "restore-read", "%s", c->what);
	free(c);
	return rc;
}
