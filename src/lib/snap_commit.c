/* snap_commit.c — one commit: scan, hash what the stat cache cannot vouch
 * for (one read: hashed and copied into the store together), write the
 * canonical manifest, make everything durable, then move the ref. */
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
#include <inttypes.h>
#include <stdbool.h>
#include <limits.h>
#include "hash.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define COPY_BUF (256 * 1024)

struct commit {
	const char *store;
	char *buf;
	struct sbx_error *e;
};

/* Moves a finished temp file to its object path, unless the object exists. */
static int publish(struct commit *c, const char *tmp, const char *digest)
{
	char path[PATH_MAX], dir[PATH_MAX];

	sbx_snap_object_path(c->store, digest, path, sizeof(path));
	if (access(path, F_OK) == 0) {
		unlink(tmp);
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s/objects/%.2s", c->store, digest + 7);
	if ((mkdir(dir, 0700) != 0 && errno != EEXIST) || rename(tmp, path) != 0) {
		sbx_error_set(c->e, SBX_EXIT_INTERNAL, "store-write", "%s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* "sha256:<hex>" from a digest in progress (which goes with it). */
static void hex_digest(struct sbx_sha256 *md, char out[72])
{
	memcpy(out, "sha256:", 7);
	sbx_sha256_final(md, out + 7);
}

static int prepare_store(const char *store, struct sbx_error *e)
{
	static const char *const dirs[] = { "objects", "refs", "statcache", "tmp" };
	char path[PATH_MAX];
	for (size_t i = 0; i < 4; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", store, dirs[i]) >= (int)sizeof(path)) {
			sbx_error_set(e, SBX_EXIT_USAGE, "path-too-long", "store path too long");
			return -1;
		}
		if (sbx_mkdir_p(path, 0700, e) != 0)
			return -1;
	}
	return 0;
}

/* Hashes an open file and copies it into the store in one read, at most
 * cap bytes (0: no cap). */
static int store_stream(const char *store, int in, char *buf, uint64_t cap, char digest[72], uint64_t *size,
			struct sbx_error *e)
{
	char tmp[PATH_MAX];
	int out = -1, rc = -1;
	struct sbx_sha256 *md = sbx_sha256_new();
	struct commit c = { .store = store, .e = e };

	*size = 0;
	snprintf(tmp, sizeof(tmp), "%s/tmp/obj.XXXXXX", store);
	if (!md || (out = mkostemp(tmp, O_CLOEXEC)) < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "store-write", "%s: %s", tmp, strerror(errno));
		tmp[0] = '\0';
		goto done;
	}
	for (;;) {
		ssize_t n = read(in, buf, COPY_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && sbx_write_all(out, buf, (size_t)n) != 0)) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "snapshot-read", "reading into the store: %s", strerror(errno));
			goto done;
		}
		if (n == 0)
			break;
		sbx_sha256_update(md, buf, (size_t)n);
		*size += (uint64_t)n;
		if (cap && *size > cap) {
			sbx_error_set(e, SBX_EXIT_RESOURCE, "too-large", "larger than %llu bytes", (unsigned long long)cap);
			goto done;
		}
	}
	hex_digest(md, digest);
	md = NULL;
	close(out);
	out = -1;
	rc = publish(&c, tmp, digest);
	tmp[0] = '\0';
done:
	if (out >= 0)
		close(out);
	if (tmp[0])
		unlink(tmp);
	sbx_sha256_free(md);
	return rc;
}

int sbx_snap_store_fd(const char *store, int fd, uint64_t cap, char digest[72], uint64_t *size, struct sbx_error *e)
{
	char *buf = malloc(COPY_BUF);
	if (!buf || prepare_store(store, e) != 0) {
		if (!buf)
			sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "store buffer");
		free(buf);
		return -1;
	}
	int rc = store_stream(store, fd, buf, cap, digest, size, e);
	free(buf);
	return rc;
}

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
	int rc = store_stream(c->store, in, c->buf, 0, x->digest, &x->size, c->e);
	if (rc != 0)
		sbx_error_prefix(c->e, x->path);
	close(in);
	return rc;
}

struct text {
	char *p;
	size_t len, cap;
	bool failed;
};

static void put(struct text *t, const char *s, size_t n)
{
	if (t->failed)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 65536;
		while (t->len + n + 1 > cap)
			cap *= 2;
		char *p = realloc(t->p, cap);
		if (!p) {
			t->failed = true;
			return;
		}
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

static void put_str(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

/* A JSON string, escaped as jansson's compact output does; bytes that are
 * not UTF-8 go through jansson's lossy path (U+FFFD). */
static void put_json_string(struct text *t, const char *s)
{
	put(t, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		const unsigned char *run = p;
		while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
			p++;
		put(t, (const char *)run, (size_t)(p - run));
		if (!*p)
			break;
		if (*p >= 0x80) {
			json_t *v = sbx_json_string_lossy((const char *)p);
			char *dumped = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			if (dumped)
				put(t, dumped + 1, strlen(dumped) - 2);
			free(dumped);
			json_decref(v);
			break;
		}
		char esc[8];
		switch (*p) {
		case '"': put(t, "\\\"", 2); break;
		case '\\': put(t, "\\\\", 2); break;
		case '\n': put(t, "\\n", 2); break;
		case '\t': put(t, "\\t", 2); break;
		case '\r': put(t, "\\r", 2); break;
		case '\b': put(t, "\\b", 2); break;
		case '\f': put(t, "\\f", 2); break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04X", *p);
			put_str(t, esc);
		}
		p++;
	}
	put(t, "\"", 1);
}

/* The canonical manifest: entries sorted by path, fixed key order, compact. */
static char *manifest_of(const struct sbx_snap_scan *s, uint64_t *files, uint64_t *bytes, size_t *len)
{
	struct text t = { 0 };
	char num[64];

	put_str(&t, "{\"mediaType\":\"" SBX_SNAP_MEDIA_TYPE "\",\"entries\":[");
	for (size_t i = 0; i < s->len; i++) {
		const struct sbx_snap_entry *x = &s->v[i];
		put_str(&t, i ? ",{\"path\":" : "{\"path\":");
		put_json_string(&t, x->path);
		if (x->type == SBX_ENTRY_FILE) {
			put_str(&t, x->exec ? ",\"type\":\"file\",\"exec\":true,\"size\":" : ",\"type\":\"file\",\"exec\":false,\"size\":");
			snprintf(num, sizeof(num), "%" PRIu64, x->size);
			put_str(&t, num);
			put_str(&t, ",\"digest\":\"");
			put_str(&t, x->digest);
			put_str(&t, "\"}");
			(*files)++;
			*bytes += x->size;
		} else if (x->type == SBX_ENTRY_SYMLINK) {
			put_str(&t, ",\"type\":\"symlink\",\"target\":");
			put_json_string(&t, x->target);
			put_str(&t, "}");
		} else {
			put_str(&t, ",\"type\":\"dir\"}");
		}
	}
	put_str(&t, "]}");
	if (t.failed) {
		free(t.p);
		return NULL;
	}
	*len = t.len;
	return t.p;
}

/* Stores bytes as an object unless it is there already; fills digest. */
static int store_blob(struct commit *c, const char *text, size_t len, char digest[72])
{
	char tmp[PATH_MAX], path[PATH_MAX];
	memcpy(digest, "sha256:", 7);
	sbx_sha256_hex(text, len, digest + 7);
	sbx_snap_object_path(c->store, digest, path, sizeof(path));
	if (access(path, F_OK) == 0)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s/tmp/obj.XXXXXX", c->store);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0 || sbx_write_all(fd, text, len) != 0) {
		sbx_error_set(c->e, SBX_EXIT_INTERNAL, "store-write", "%s: %s", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return -1;
	}
	close(fd);
	return publish(c, tmp, digest);
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

json_t *sbx_snap_commit(const char *workspace, const char *store, const char *ref, struct sbx_error *e)
{
	int fd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "workspace: %.300s: %s", workspace, strerror(errno));
		return NULL;
	}
	json_t *receipt = sbx_snap_commit_scanned(fd, store, ref, NULL, e);
	close(fd);
	return receipt;
}

json_t *sbx_snap_commit_at(int wsfd, const char *store, const char *ref, struct sbx_error *e)
{
	return sbx_snap_commit_scanned(wsfd, store, ref, NULL, e);
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

/* Every object durable before the ref that reaches them moves. */
static int sync_and_move_ref(struct commit *c, const char *ref, const char *digest)
{
	int storefd = open(c->store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int synced = storefd >= 0 && syncfs(storefd) == 0;
	if (storefd >= 0)
		close(storefd);
	if (!synced) {
		sbx_error_set(c->e, SBX_EXIT_INTERNAL, "store-write", "%.300s: cannot sync: %s", c->store, strerror(errno));
		return -1;
	}
	return ref ? move_ref(c, ref, digest) : 0;
}

/* The manifest's object: the last commit's when the stat cache vouches for
 * every entry (and the object is still there), else written anew. */
static int manifest_object(struct commit *c, const struct sbx_snap_scan *s, const char *cached, char digest[72],
			   uint64_t *files, uint64_t *bytes, size_t *size)
{
	char path[PATH_MAX];
	struct stat st;
	if (cached && sbx_snap_object_path(c->store, cached, path, sizeof(path)) == 0 && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode)) {
		memcpy(digest, cached, 72);
		*size = (size_t)st.st_size;
		for (size_t i = 0; i < s->len; i++)
			if (s->v[i].type == SBX_ENTRY_FILE) {
				(*files)++;
				*bytes += s->v[i].size;
			}
		return 0;
	}
	char *text = manifest_of(s, files, bytes, size);
	if (!text) {
		sbx_error_set(c->e, SBX_EXIT_INTERNAL, "out-of-memory", "building the manifest");
		return -1;
	}
	int rc = store_blob(c, text, *size, digest);
	free(text);
	return rc;
}

json_t *sbx_snap_commit_scanned(int wsfd, const char *store, const char *ref, struct sbx_snap_scan *given,
				struct sbx_error *e)
{
	struct commit c = { .store = store, .e = e };
	struct sbx_snap_scan own = { 0 }, *s = given ? given : &own;
	struct sbx_statcache cache = { 0 };
	json_t *receipt = NULL;
	uint64_t files = 0, bytes = 0, hashed = 0;
	char digest[72], cache_path[PATH_MAX];
	size_t size = 0;
	int lock = -1, rootfd = -1;

	if (ref && !sbx_snap_valid_ref(ref)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-ref", "--ref: '%.80s' must match [A-Za-z0-9._-]{1,128}, "
			      "not start with '.' nor end in .log", ref);
		return NULL;
	}
	if (prepare_store(store, e) != 0 || (lock = sbx_snap_lock(store, false, e)) < 0 ||
	    (rootfd = openat(wsfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || !(c.buf = malloc(COPY_BUF)) ||
	    (!given && sbx_snap_scan_at(rootfd, s, e) != 0))
		goto done;
	cache_path_of(wsfd, store, cache_path, sizeof(cache_path));
	sbx_statcache_load(cache_path, &cache);
	for (size_t i = 0; i < s->len; i++) {
		struct sbx_snap_entry *x = &s->v[i];
		/* Unchanged by every stat fact: the stored digest still holds
		 * (gc drops the stat caches with the objects it removes). */
		if (sbx_statcache_match(&cache, x) || x->type != SBX_ENTRY_FILE)
			continue;
		if (store_file(&c, rootfd, x) != 0)
			goto done;
		hashed++;
	}
	const char *cached = sbx_statcache_manifest(&cache, s->len);
	if (manifest_object(&c, s, cached, digest, &files, &bytes, &size) != 0)
		goto done;
	/* The ref already there: nothing moves (its objects were made durable
	 * before it was written), no sync, no log line. */
	if (!(ref && ref_is(&c, ref, digest)) && sync_and_move_ref(&c, ref, digest) != 0)
		goto done;
	if (!cached)
		sbx_statcache_save(cache_path, s, digest);
	receipt = json_pack("{s:s,s:I,s:I,s:I,s:s,s:s,s:I}", "digest", digest, "size", (json_int_t)size,
			    "files", (json_int_t)files, "bytes", (json_int_t)bytes,
			    "mediaType", SBX_SNAP_MEDIA_TYPE, "pool", SBX_SNAP_POOL, "hashedFiles", (json_int_t)hashed);
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
