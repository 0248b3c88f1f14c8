/* snap_object.c — objects into the store: a stream hashed and copied in one
 * read under a cap, published by rename (an object already there is kept
 * and freshened, so a collection running meanwhile spares it). */
#include "snap_store.h"
#include "atomic_file.h"
#include "exitcodes.h"
#include "hash.h"
#include "io.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_BUF SBX_SNAP_COPY_BUF

int sbx_snap_prepare(const char *store, struct sbx_error *e)
{
	static const char *const dirs[] = { "objects", "refs", "statcache", "tmp", "pins" };
	char path[PATH_MAX];
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (snprintf(path, sizeof(path), "%s/%s", store, dirs[i]) >= (int)sizeof(path)) {
			sbx_error_set(e, SBX_EXIT_USAGE, "path-too-long", "store path too long");
			return -1;
		}
		if (sbx_mkdir_p(path, 0700, e) != 0)
			return -1;
	}
	return 0;
}

int sbx_snap_freshen(const char *store, const char *digest)
{
	char path[PATH_MAX];
	if (sbx_snap_object_path(store, digest, path, sizeof(path)) != 0)
		return -1;
	return utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW);
}

int sbx_snap_publish(const char *store, const char *tmp, const char *digest, struct sbx_error *e)
{
	char path[PATH_MAX], dir[PATH_MAX];

	/* Already there: the caller's reference to it must outlive a
	 * collection that began before, which spares what is newer than it. */
	if (sbx_snap_freshen(store, digest) == 0) {
		unlink(tmp);
		return 0;
	}
	sbx_snap_object_path(store, digest, path, sizeof(path));
	snprintf(dir, sizeof(dir), "%s/objects/%.2s", store, digest + 7);
	if ((mkdir(dir, 0700) != 0 && errno != EEXIST) || rename(tmp, path) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "store-write", "%s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Hashes an open file and copies it into the store in one read: at most
 * cap bytes are written, one more read byte is the error; exact: exactly
 * cap bytes are read (a file that grew is stored as it was, one that came
 * up short fails). */
static int store_stream(const char *store, int in, char *buf, uint64_t cap, bool exact, char digest[72],
			uint64_t *size, struct sbx_error *e)
{
	char tmp[PATH_MAX];
	int out = -1, rc = -1;
	struct sbx_sha256 *md = sbx_sha256_new();

	*size = 0;
	snprintf(tmp, sizeof(tmp), "%s/tmp/obj.XXXXXX", store);
	if (!md || (out = mkostemp(tmp, O_CLOEXEC)) < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "store-write", "%s: %s", tmp, strerror(errno));
		tmp[0] = '\0';
		goto done;
	}
	for (;;) {
		size_t want = exact && cap - *size < COPY_BUF ? (size_t)(cap - *size) : COPY_BUF;
		ssize_t n = want ? read(in, buf, want) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (exact && n == 0 && *size < cap) {
			sbx_error_set(e, SBX_EXIT_USAGE, "snapshot-read", "shorter than the %llu bytes it had when opened",
				      (unsigned long long)cap);
			goto done;
		}
		if (n > 0 && (uint64_t)n > cap - *size) {
			sbx_error_set(e, SBX_EXIT_RESOURCE, "too-large", "larger than %llu bytes", (unsigned long long)cap);
			goto done;
		}
		if (n < 0 || (n > 0 && sbx_write_all(out, buf, (size_t)n) != 0)) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "snapshot-read", "reading into the store: %s", strerror(errno));
			goto done;
		}
		if (n == 0)
			break;
		sbx_sha256_update(md, buf, (size_t)n);
		*size += (uint64_t)n;
	}
	memcpy(digest, "sha256:", 7);
	sbx_sha256_final(md, digest + 7);
	md = NULL;
	close(out);
	out = -1;
	rc = sbx_snap_publish(store, tmp, digest, e);
	tmp[0] = '\0';
done:
	if (out >= 0)
		close(out);
	if (tmp[0])
		unlink(tmp);
	sbx_sha256_free(md);
	return rc;
}

int sbx_snap_store_stream(const char *store, int in, char *buf, uint64_t cap, char digest[72], uint64_t *size,
			  struct sbx_error *e)
{
	return store_stream(store, in, buf, cap, false, digest, size, e);
}

static int store_fd(const char *store, int fd, uint64_t cap, bool exact, struct sbx_snap_pin *pin, char digest[72],
		    uint64_t *size, struct sbx_error *e)
{
	char *buf = malloc(COPY_BUF);
	int lock = -1, rc = -1;
	if (!buf) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "store buffer");
		return -1;
	}
	/* Shared: a collection waits until the object is pinned. */
	if (sbx_snap_prepare(store, e) == 0 && (lock = sbx_snap_lock(store, false, e)) >= 0 &&
	    store_stream(store, fd, buf, cap, exact, digest, size, e) == 0)
		rc = pin ? sbx_snap_pin_add(store, pin, digest, e) : 0;
	if (lock >= 0)
		close(lock);
	free(buf);
	return rc;
}

int sbx_snap_store_fd(const char *store, int fd, uint64_t cap, struct sbx_snap_pin *pin, char digest[72],
		      uint64_t *size, struct sbx_error *e)
{
	return store_fd(store, fd, cap, false, pin, digest, size, e);
}

int sbx_snap_store_fd_exact(const char *store, int fd, uint64_t size, struct sbx_snap_pin *pin, char digest[72],
			    struct sbx_error *e)
{
	uint64_t got = 0;
	return store_fd(store, fd, size, true, pin, digest, &got, e);
}
