/* snap_commit.c — one commit: scan, hash what the stat cache cannot vouch
 * for (one read: hashed and copied into the store together), store the
 * canonical manifest when it is new, make everything durable, then move
 * the ref (not when it names that manifest already). */
#include "snap_store.h"
#include "atomic_file.h"
#include "beneath.h"
#include "exitcodes.h"
#include "fnv.h"
#include "io.h"
#include "json.h"
#include "snap_scan.h"
#include "snap_statcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct commit {
	const char *store;
	char *buf;
	struct sbx_error *e;
};

/* A workspace file into the store; its stat facts (of what is read) go to
 * the cache. */
static int store_file(struct commit *c, int rootfd, struct sbx_snap_entry *x)
{
	struct stat st;
	int in = sbx_open_beneath(rootfd, x->path, O_RDONLY | O_NONBLOCK, SBX_BENEATH_NO_SYMLINKS);
	if (in < 0 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
		sbx_error_set(c->e, SBX_EXIT_INTERNAL, "snapshot-read", "%.300s: %s", x->path,
			      in < 0 || !S_ISREG(st.st_mode) ? strerror(errno ? errno : EINVAL) : strerror(errno));
		if (in >= 0)
			close(in);
		return -1;
	}
	x->dev = (uint64_t)st.st_dev;
	x->ino = (uint64_t)st.st_ino;
	x->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	x->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	x->exec = (st.st_mode & S_IXUSR) != 0;
	int rc = sbx_snap_store_stream(c->store, in, c->buf, SBX_SNAP_NO_CAP, x->digest, &x->size, c->e);
	if (rc != 0)
		sbx_error_prefix(c->e, x->path);
	close(in);
	return rc;
}

/* Whether refs/<ref> holds exactly digest (and its newline). */
static bool ref_is(const struct commit *c, const char *ref, const char *digest)
{
	char path[PATH_MAX], line[160];
	snprintf(path, sizeof(path), "%s/refs/%s", c->store, ref);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, line, sizeof(line) - 1) : -1;
	if (fd >= 0)
		close(fd);
	size_t want = strlen(digest);
	return n == (ssize_t)want + 1 && !memcmp(line, digest, want) && line[want] == '\n';
}

static int move_ref(struct commit *c, const char *ref, const char *digest)
{
	char path[PATH_MAX], line[160], when[32];
	time_t now = time(NULL);
	struct tm tm;

	snprintf(path, sizeof(path), "%s/refs/%s", c->store, ref);
	snprintf(line, sizeof(line), "%s\n", digest);
	if (sbx_atomic_write(path, line, strlen(line), 0600, c->e) != 0)
		return -1;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(path, sizeof(path), "%s/refs/%s.log", c->store, ref);
	snprintf(line, sizeof(line), "{\"at\":\"%s\",\"digest\":\"%s\"}\n", when, digest);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	int rc = fd >= 0 && sbx_write_all(fd, line, strlen(line)) == 0 && fsync(fd) == 0 ? 0 : -1;
	if (fd >= 0)
		close(fd);
	if (rc != 0)
		sbx_error_set(c->e, SBX_EXIT_INTERNAL, "store-write", "%s: %s", path, strerror(errno));
	return rc;
}

json_t *sbx_snap_commit(const char *workspace, const char *store, const char *ref, uint64_t max_manifest,
			struct sbx_error *e)
{
	int fd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "workspace: %.300s: %s", workspace, strerror(errno));
		return NULL;
	}
	json_t *receipt = sbx_snap_commit_scanned(fd, store, ref, NULL, max_manifest, e);
	close(fd);
	return receipt;
}

/* The stat cache is keyed by the workspace's name: a cache miss costs only
 * a rehash, and the cache is checked against every stat fact. */
static void cache_path_of(int wsfd, const char *store, char *out, size_t size)
{
	char real[PATH_MAX];
	if (sbx_fd_path(wsfd, real, sizeof(real)) != 0)
		snprintf(real, sizeof(real), "fd");
	snprintf(out, size, "%s/statcache/%016llx.bin", store,
		 (unsigned long long)sbx_fnv1a64(SBX_FNV_INIT, real, strlen(real)));
}

/* fsync of one object and of its directory (the entry too must last). */
static bool sync_object(const char *store, const char *digest)
{
	char path[PATH_MAX], dir[PATH_MAX];
	if (sbx_snap_object_path(store, digest, path, sizeof(path)) != 0)
		return false;
	snprintf(dir, sizeof(dir), "%s/objects/%.2s", store, digest + 7);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool ok = fd >= 0 && dfd >= 0 && fsync(fd) == 0 && fsync(dfd) == 0;
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return ok;
}

/* Every object durable before the ref that reaches them moves. A commit
 * that hashed no file names, beyond what the stat cache vouches for (it
 * is saved only after such a sync), the manifest alone: that object is
 * synced (it may be a concurrent commit's, not synced yet), not the whole
 * file system; one whose manifest the cache vouches for needs none. */
static int sync_and_move_ref(struct commit *c, const char *ref, const char *digest, bool manifest_only,
			     bool vouched)
{
	bool synced;
	if (manifest_only) {
		synced = vouched || sync_object(c->store, digest);
	} else {
		int storefd = open(c->store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		synced = storefd >= 0 && syncfs(storefd) == 0;
		if (storefd >= 0)
			close(storefd);
	}
	if (!synced) {
		sbx_error_set(c->e, SBX_EXIT_INTERNAL, "store-write", "%.300s: cannot sync: %s", c->store, strerror(errno));
		return -1;
	}
	return ref ? move_ref(c, ref, digest) : 0;
}

/* The manifest's object: the last commit's when the stat cache vouches for
 * every entry (and the object is still there), else the scan's, hashed
 * first and written only when the store does not hold it yet. */
static int manifest_object(struct commit *c, const struct sbx_snap_scan *s, const char *cached, uint64_t cap,
			   char digest[72], uint64_t *files, uint64_t *bytes, uint64_t *size, bool *stored)
{
	char path[PATH_MAX], tmp[PATH_MAX], again[72];
	struct stat st;
	*stored = false;
	if (cached && sbx_snap_object_path(c->store, cached, path, sizeof(path)) == 0 && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode) && (uint64_t)st.st_size <= cap && sbx_snap_freshen(c->store, cached) == 0) {
		memcpy(digest, cached, 72);
		*size = (uint64_t)st.st_size;
		*files = *bytes = 0;
		for (size_t i = 0; i < s->len; i++)
			if (s->v[i].type == SBX_ENTRY_FILE) {
				(*files)++;
				*bytes += s->v[i].size;
			}
		return 0;
	}
	if (sbx_snap_manifest_write(s, -1, cap, digest, size, files, bytes, c->e) != 0)
		return -1;
	if (sbx_snap_freshen(c->store, digest) == 0)
		return 0; /* the same tree as a stored snapshot: nothing new */
	snprintf(tmp, sizeof(tmp), "%s/tmp/manifest.XXXXXX", c->store);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		sbx_error_set(c->e, SBX_EXIT_INTERNAL, "store-write", "%s: %s", tmp, strerror(errno));
		return -1;
	}
	int rc = sbx_snap_manifest_write(s, fd, cap, again, size, files, bytes, c->e);
	close(fd);
	if (rc == 0 && strcmp(again, digest) != 0) {
		sbx_error_set(c->e, SBX_EXIT_INTERNAL, "store-write", "the manifest changed between two writes of one scan");
		rc = -1;
	}
	if (rc != 0) {
		unlink(tmp);
		return -1;
	}
	*stored = true;
	return sbx_snap_publish(c->store, tmp, digest, c->e);
}

json_t *sbx_snap_commit_scanned(int wsfd, const char *store, const char *ref, struct sbx_snap_scan *given,
				uint64_t max_manifest, struct sbx_error *e)
{
	struct commit c = { .store = store, .e = e };
	struct sbx_snap_scan own = { 0 }, *s = given ? given : &own;
	struct sbx_statcache cache = { 0 };
	json_t *receipt = NULL;
	uint64_t files = 0, bytes = 0, hashed = 0, size = 0;
	char digest[72], cache_path[PATH_MAX];
	bool stored = false;
	int lock = -1, rootfd = -1;

	if (ref && !sbx_snap_valid_ref(ref)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-ref", "--ref: '%.80s' must match [A-Za-z0-9._-]{1,128}, "
			      "not start with '.' nor end in .log", ref);
		return NULL;
	}
	/* Shared for the whole commit: a collection starts before it or
	 * after its ref moved, never in between. */
	if (sbx_snap_prepare(store, e) != 0 || (lock = sbx_snap_lock(store, false, e)) < 0 ||
	    (rootfd = openat(wsfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || !(c.buf = malloc(SBX_SNAP_COPY_BUF)) ||
	    (!given && sbx_snap_scan_at(rootfd, s, e) != 0))
		goto done;
	cache_path_of(wsfd, store, cache_path, sizeof(cache_path));
	sbx_statcache_load(cache_path, &cache);
	for (size_t i = 0; i < s->len; i++) {
		struct sbx_snap_entry *x = &s->v[i];
		/* Unchanged by every stat fact: the stored digest still holds
		 * (a collection keeps a stat cache only with the snapshot it
		 * made, and with it every object it names). */
		if (sbx_statcache_match(&cache, x) || x->type != SBX_ENTRY_FILE)
			continue;
		if (store_file(&c, rootfd, x) != 0)
			goto done;
		hashed++;
	}
	const char *cached = sbx_statcache_manifest(&cache, s->len);
	if (manifest_object(&c, s, cached, max_manifest, digest, &files, &bytes, &size, &stored) != 0)
		goto done;
	/* The ref already there: nothing moves (its objects were made durable
	 * before it was written), no sync, no log line. */
	if (!(ref && ref_is(&c, ref, digest)) &&
	    sync_and_move_ref(&c, ref, digest, hashed == 0 && !stored, cached && !strcmp(cached, digest)) != 0)
		goto done;
	if (!cached)
		sbx_statcache_save(cache_path, s, digest);
	receipt = json_pack("{s:s,s:I,s:I,s:I,s:s,s:s,s:I,s:b}", "digest", digest, "size", (json_int_t)size,
			    "files", (json_int_t)files, "bytes", (json_int_t)bytes,
			    "mediaType", SBX_SNAP_MEDIA_TYPE, "pool", SBX_SNAP_POOL, "hashedFiles", (json_int_t)hashed,
			    "manifestStored", stored);
	if (ref)
		json_object_set_new(receipt, "ref", json_string(ref));
done:
	if (!given)
		sbx_snap_scan_free(&own);
	sbx_statcache_free(&cache);
	free(c.buf);
	if (rootfd >= 0)
		close(rootfd);
	if (lock >= 0)
		close(lock);
	return receipt;
}

int sbx_snap_ref_point(const char *store, const char *ref, const char *digest, struct sbx_error *e)
{
	struct commit c = { .store = store, .e = e };
	if (!sbx_snap_valid_ref(ref) || !sbx_snap_valid_digest(digest)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-ref", "bad ref '%.80s' or digest", ref);
		return -1;
	}
	int lock = sbx_snap_prepare(store, e) == 0 ? sbx_snap_lock(store, false, e) : -1;
	if (lock < 0)
		return -1;
	/* Freshened under the lock: a collection that began before it keeps
	 * the manifest, one that begins after sees the ref. */
	int rc = sbx_snap_freshen(store, digest);
	if (rc != 0)
		sbx_error_set(e, SBX_EXIT_USAGE, "unknown-digest", "%s: no such object in the store", digest);
	else
		rc = move_ref(&c, ref, digest);
	close(lock);
	return rc;
}

json_t *sbx_snap_commit_entries(const char *store, const char *ref, const struct sbx_snap_scan *s,
				uint64_t max_manifest, struct sbx_snap_pin *pin, struct sbx_error *e)
{
	struct commit c = { .store = store, .e = e };
	uint64_t files = 0, bytes = 0, size = 0;
	char digest[72];
	bool stored = false;
	json_t *receipt = NULL;
	if (!sbx_snap_valid_ref(ref)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-ref", "bad ref '%.80s'", ref);
		return NULL;
	}
	/* Shared: a collection's barrier comes before the manifest is stored
	 * or after the ref names it. */
	int lock = sbx_snap_prepare(store, e) == 0 ? sbx_snap_lock(store, false, e) : -1;
	if (lock < 0)
		return NULL;
	if (manifest_object(&c, s, NULL, max_manifest, digest, &files, &bytes, &size, &stored) == 0 &&
	    (!pin || sbx_snap_pin_add(store, pin, digest, e) == 0) &&
	    sync_and_move_ref(&c, ref, digest, false, false) == 0)
		receipt = json_pack("{s:s,s:I,s:I,s:I}", "digest", digest, "size", (json_int_t)size, "files",
				    (json_int_t)files, "bytes", (json_int_t)bytes);
	close(lock);
	return receipt;
}
