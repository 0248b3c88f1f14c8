/* snap_retain.c — the retention policy, applied at a collection's barrier
 * (the store's exclusive lock: no commit in flight): each ref keeps its
 * target and the last N versions of its reflog; stat caches stay only with
 * a snapshot kept (they vouch for its objects); tmp/ holds only leftovers. */
#include "snap_gc.h"
#include "snap_store.h"
#include "snap_statcache.h"
#include "atomic_file.h"
#include "json.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE_MAX_BYTES 256 /* a reflog line is ~110 bytes */

/* The digest of one reflog line, or NULL. */
static const char *line_digest(const char *line, char out[72])
{
	json_t *row = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
	const char *d = sbx_json_string_or(row, "digest", "");
	const char *ok = sbx_snap_valid_digest(d) ? out : NULL;
	if (ok)
		snprintf(out, 72, "%s", d);
	json_decref(row);
	return ok;
}

/* Every version kept: each line's digest, read as a stream. */
static void mark_all(int fd, struct snap_retained *r)
{
	char line[LINE_MAX_BYTES * 4], digest[72];
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (line_digest(line, digest))
			sbx_map_put(&r->manifests, digest, strlen(digest), NULL, NULL);
	fclose(f);
}

/* The log's tail, only as much as keep lines can take (a partial first
 * line is skipped). */
static char *read_tail(int fd, unsigned keep, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return NULL;
	uint64_t want = ((uint64_t)keep + 1) * LINE_MAX_BYTES;
	uint64_t size = (uint64_t)st.st_size, from = size > want ? size - want : 0;
	char *buf = malloc((size_t)(size - from) + 1);
	ssize_t n = buf ? pread(fd, buf, (size_t)(size - from), (off_t)from) : -1;
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = (size_t)n;
	if (from > 0) {
		char *nl = memchr(buf, '\n', *len);
		size_t skip = nl ? (size_t)(nl - buf) + 1 : *len;
		memmove(buf, buf + skip, *len - skip + 1);
		*len -= skip;
	}
	return buf;
}

static void trim_log(const char *store, const char *name, unsigned keep, struct snap_retained *r)
{
	char path[PATH_MAX], digest[72];
	size_t len = 0, n = 0;
	snprintf(path, sizeof(path), "%s/refs/%s", store, name);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && keep == 0) {
		mark_all(fd, r);
		return;
	}
	char *text = fd >= 0 ? read_tail(fd, keep, &len) : NULL;
	struct stat st;
	bool whole = fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size == len;
	if (fd >= 0)
		close(fd);
	if (!text)
		return;
	/* The valid lines, newest last; each ends in '\n' in text. */
	char **lines = NULL;
	size_t cap = 0;
	for (char *p = text, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
		*nl = '\0';
		if (!line_digest(p, digest))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **grown = realloc(lines, cap * sizeof(*lines));
			if (!grown)
				break;
			lines = grown;
		}
		lines[n++] = p;
	}
	size_t first = n > keep ? n - keep : 0;
	for (size_t i = first; i < n; i++)
		if (line_digest(lines[i], digest))
			sbx_map_put(&r->manifests, digest, strlen(digest), NULL, NULL);
	/* Rewritten only when something goes (or a tail was all we read). */
	if (first > 0 || !whole) {
		size_t out_len = 0;
		for (size_t i = first; i < n; i++)
			out_len += strlen(lines[i]) + 1;
		char *out = malloc(out_len + 1), *q = out;
		for (size_t i = first; out && i < n; i++) {
			size_t k = strlen(lines[i]);
			memcpy(q, lines[i], k);
			q[k] = '\n';
			q += k + 1;
		}
		struct sbx_error ignored;
		if (out && sbx_atomic_write(path, out, out_len, 0600, &ignored) == 0)
			r->versions_dropped += first;
		free(out);
	}
	free(lines);
	free(text);
}

/* Every entry of a store directory, one call each. */
static void each_entry(const char *store, const char *dir, void (*fn)(const char *, int, const char *, void *),
		       void *arg)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", store, dir);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	for (struct dirent *de; d && (de = readdir(d));)
		if (de->d_name[0] != '.')
			fn(store, dfd, de->d_name, arg);
	if (d)
		closedir(d);
	else if (dfd >= 0)
		close(dfd);
}

struct retain_arg {
	unsigned keep;
	struct snap_retained *r;
};

static void on_ref(const char *store, int dfd, const char *name, void *arg)
{
	struct retain_arg *a = arg;
	size_t n = strlen(name);
	char digest[72];
	struct sbx_error ignored;
	(void)dfd;
	if (n > 4 && !strcmp(name + n - 4, ".log"))
		trim_log(store, name, a->keep, a->r);
	else if (sbx_snap_resolve(store, name, digest, &ignored) == 0)
		sbx_map_put(&a->r->manifests, digest, strlen(digest), NULL, NULL);
}

static void on_cache(const char *store, int dfd, const char *name, void *arg)
{
	struct snap_retained *r = arg;
	char path[PATH_MAX], manifest[72];
	snprintf(path, sizeof(path), "%s/statcache/%s", store, name);
	if (sbx_statcache_manifest_of(path, manifest) && sbx_map_has(&r->manifests, manifest, strlen(manifest)))
		return;
	if (unlinkat(dfd, name, 0) == 0)
		r->caches_dropped++;
}

static void on_tmp(const char *store, int dfd, const char *name, void *arg)
{
	(void)store;
	(void)arg;
	unlinkat(dfd, name, 0);
}

void snap_retain(const char *store, unsigned keep, struct snap_retained *r)
{
	struct retain_arg a = { keep, r };
	sbx_map_init(&r->manifests);
	r->versions_dropped = r->caches_dropped = 0;
	each_entry(store, "refs", on_ref, &a);
	each_entry(store, "statcache", on_cache, r);
	each_entry(store, "tmp", on_tmp, NULL);
}
