/* snapshot_gc.c — collection of the remote snapshot store: the newest
 * manifests per workspace key stay, older ones go, then every object no
 * kept manifest names, past a grace age and not written since a snapshot
 * still being made (in any process: its hold file) began. Takes no lock a
 * snapshot waits on. */
#include "ws.h"
#include "snapshot_gc.h"
#include "snapshot.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"

#include <jansson.h>
#include <limits.h>
#include <sys/file.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_MAX (16u << 20) /* what a read of the snapshot accepts */
#define CLOCK_SLACK_MS 1000      /* file times come from a coarser clock */
#define SHA_LEN 64

#define HOLDS_MAX 4096        /* hold files looked at in one pass (more: nothing is swept) */
#define HOLD_NEW_STALE_MS 60000 /* a half-made hold older than this is a crash's */

int snapshot_hold(const char *data, struct snapshot_hold *h, struct sbx_error *e)
{
	char dir[PATH_MAX + 32], tmp[PATH_MAX + 64];
	h->fd = -1;
	snapshot_store_path(data, NULL, dir, sizeof(dir));
	mkdir(dir, 0700);
	snapshot_store_path(data, "holds", dir, sizeof(dir));
	mkdir(dir, 0700);
	/* Made under a name collection does not take for a hold, flocked,
	 * then renamed: a collector never finds it unlocked. */
	if (snprintf(tmp, sizeof(tmp), "%s/.new-XXXXXX", dir) >= (int)sizeof(tmp) ||
	    (h->fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "hold", "Cannot snapshot the remote workspace: %s", strerror(errno));
		return -1;
	}
	snprintf(h->path, sizeof(h->path), "%s/hold-%s", dir, strrchr(tmp, '-') + 1);
	if (flock(h->fd, LOCK_EX) != 0 || rename(tmp, h->path) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "hold", "Cannot snapshot the remote workspace: %s", strerror(errno));
		unlink(tmp);
		close(h->fd);
		h->fd = -1;
		return -1;
	}
	return 0;
}

void snapshot_release(struct snapshot_hold *h)
{
	if (h->fd < 0)
		return;
	unlink(h->path);
	close(h->fd);
	h->fd = -1;
}

static long long mtime_ms(const struct stat *st)
{
	return (long long)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

/* The oldest live hold's start (now when none); a dead maker's hold (no
 * flock) goes. */
static long long oldest_hold(const char *data, long long now)
{
	char path[PATH_MAX + 32];
	snapshot_store_path(data, "holds", path, sizeof(path));
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dir >= 0 ? fdopendir(dir) : NULL;
	if (!d) {
		if (dir >= 0)
			close(dir);
		return now;
	}
	long long oldest = now;
	struct dirent *de;
	for (int seen = 0; (de = readdir(d)); seen++) {
		if (seen == HOLDS_MAX) { /* more than a pass looks at: spare every object */
			oldest = 0;
			break;
		}
		bool made = !strncmp(de->d_name, "hold-", 5), half = !strncmp(de->d_name, ".new-", 5);
		struct stat st;
		if ((!made && !half) || fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (half) { /* being made right now, or left by a crash */
			oldest = mtime_ms(&st) < oldest ? mtime_ms(&st) : oldest;
			if (now - mtime_ms(&st) > HOLD_NEW_STALE_MS)
				unlinkat(dir, de->d_name, 0);
			continue;
		}
		int fd = openat(dir, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			unlinkat(dir, de->d_name, 0); /* its maker is gone */
		else
			oldest = mtime_ms(&st) < oldest ? mtime_ms(&st) : oldest;
		close(fd);
	}
	closedir(d);
	return oldest;
}

struct manifest {
	char name[64];
	char *key, captured[32];
	size_t first, count;         /* its objects in the mark's list */
};

struct mark {
	struct manifest *m;
	size_t n, cap;
	char (*sha)[SHA_LEN];        /* the objects manifests name, then only the kept ones' */
	size_t n_sha, cap_sha;
};

static bool hex64(const char *s)
{
	return s && strlen(s) == SHA_LEN && strspn(s, "0123456789abcdef") == SHA_LEN;
}

static bool manifest_name(const char *name)
{
	size_t n = strlen(name);
	return n == 41 && !strcmp(name + 36, ".json") && strspn(name, "0123456789abcdef-") == 36;
}

/* *v holds at least need (and always some) elements of size. */
static bool grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (*v && need <= *cap)
		return true;
	size_t cap2 = *cap ? *cap * 2 : 64;
	while (cap2 < need)
		cap2 *= 2;
	void *p = realloc(*v, cap2 * size);
	if (!p)
		return false;
	*v = p;
	*cap = cap2;
	return true;
}

/* Reads one manifest into the mark: 0, 1 when it is not a snapshot a read
 * would serve (so it protects nothing), -1 on an I/O error. */
static int mark_one(struct mark *k, int dir, const char *name)
{
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MANIFEST_MAX) {
		close(fd);
		return 1;
	}
	char *text = malloc((size_t)st.st_size + 1);
	ssize_t got = text ? pread(fd, text, (size_t)st.st_size, 0) : -1;
	close(fd);
	if (got != st.st_size) {
		free(text);
		return -1;
	}
	json_t *doc = json_loadb(text, (size_t)got, 0, NULL);
	free(text);
	const char *key = json_string_value(json_object_get(doc, "workspace"));
	const char *captured = json_string_value(json_object_get(doc, "capturedAt"));
	json_t *files = json_object_get(doc, "files");
	if (!key || !captured || strlen(captured) >= 32 || !json_is_array(files) ||
	    !grow((void **)&k->m, &k->cap, k->n + 1, sizeof(*k->m)) ||
	    !grow((void **)&k->sha, &k->cap_sha, k->n_sha + json_array_size(files), SHA_LEN)) {
		json_decref(doc);
		return 1;
	}
	struct manifest *m = &k->m[k->n];
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(m->captured, sizeof(m->captured), "%s", captured);
	m->key = strdup(key);
	m->first = k->n_sha;
	size_t i;
	json_t *f;
	json_array_foreach(files, i, f) {
		const char *sha = json_string_value(json_object_get(f, "sha256"));
		if (hex64(sha))
			memcpy(k->sha[k->n_sha++], sha, SHA_LEN);
	}
	m->count = k->n_sha - m->first;
	json_decref(doc);
	if (!m->key)
		return 1;
	k->n++;
	return 0;
}

/* Per key, newest first (capturedAt, then name). */
static int by_key_newest(const void *a, const void *b)
{
	const struct manifest *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	if (!c)
		c = strcmp(y->captured, x->captured);
	return c ? c : strcmp(y->name, x->name);
}

static int by_sha(const void *a, const void *b)
{
	return memcmp(a, b, SHA_LEN);
}

/* Removes the manifests past `keep` per key; the kept ones' objects are
 * gathered to the front of k->sha, sorted. */
static long long prune(struct mark *k, int dir, long long keep)
{
	long long removed = 0;
	char (*kept)[SHA_LEN] = k->n_sha ? malloc(k->n_sha * SHA_LEN) : NULL;
	size_t n_kept = 0, rank = 0;
	if (k->n_sha && !kept)
		return -1;
	if (k->n)
		qsort(k->m, k->n, sizeof(*k->m), by_key_newest);
	for (size_t i = 0; i < k->n; i++) {
		rank = i && !strcmp(k->m[i].key, k->m[i - 1].key) ? rank + 1 : 0;
		if (keep && rank >= (size_t)keep) {
			if (unlinkat(dir, k->m[i].name, 0) == 0 || errno == ENOENT) {
				removed++;
				continue;
			} /* still there: it still protects its objects */
		}
		if (k->m[i].count)
			memcpy(kept + n_kept, k->sha + k->m[i].first, k->m[i].count * SHA_LEN);
		n_kept += k->m[i].count;
	}
	free(k->sha);
	k->sha = kept;
	k->n_sha = n_kept;
	if (n_kept)
		qsort(k->sha, n_kept, SHA_LEN, by_sha);
	return removed;
}

/* An object set aside goes back to its name; when another copy is there
 * already (or the filesystem cannot rename without replacing, and a link
 * can), the aside name goes. A failure leaves it aside, where reads and
 * the next pass look for it. */
static void put_back(int objects, const char *aside, const char *name)
{
	if (renameat2(objects, aside, objects, name, RENAME_NOREPLACE) == 0)
		return;
	if (errno == EEXIST || linkat(objects, aside, objects, name, 0) == 0 || errno == EEXIST)
		unlinkat(objects, aside, 0);
}

/* One unreferenced name in objects/: removed when written before cut. An
 * object is first renamed aside, so a snapshot that renames a fresh copy
 * into place meanwhile is the one found aside, and put back. */
static bool sweep_one(int objects, const char *name, long long cut, long long grace_ms, long long *due)
{
	struct stat st;
	if (fstatat(objects, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return false;
	if (mtime_ms(&st) >= cut) {
		long long when = mtime_ms(&st) + grace_ms + CLOCK_SLACK_MS;
		*due = *due && *due < when ? *due : when;
		return false;
	}
	if (!hex64(name))
		return unlinkat(objects, name, 0) == 0;
	char aside[SHA_LEN + 16];
	snprintf(aside, sizeof(aside), ".doomed-%s", name);
	if (renameat(objects, name, objects, aside) != 0)
		return false;
	if (fstatat(objects, aside, &st, AT_SYMLINK_NOFOLLOW) == 0 && mtime_ms(&st) >= cut) {
		put_back(objects, aside, name);
		return false;
	}
	return unlinkat(objects, aside, 0) == 0;
}

static bool leftover(const char *name)
{
	return !strncmp(name, ".incoming-", 10) || !strncmp(name, ".doomed-", 8) || strstr(name, ".json.tmp.");
}

static long long sweep(int dir, const struct mark *k, long long cut, long long grace_ms, long long *due)
{
	long long removed = 0;
	int objects = openat(dir, "objects", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = objects >= 0 ? fdopendir(objects) : NULL;
	if (!d) {
		if (objects >= 0)
			close(objects);
		return 0;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *name = de->d_name, *sha = !strncmp(name, ".doomed-", 8) ? name + 8 : name;
		bool named = hex64(sha) && k->n_sha && bsearch(sha, k->sha, k->n_sha, SHA_LEN, by_sha);
		if (named && sha != name) /* left aside by a pass that could not put it back */
			put_back(objects, name, sha);
		else if (!named && (hex64(name) || leftover(name)))
			removed += sweep_one(objects, name, cut, grace_ms, due);
	}
	closedir(d);
	return removed;
}

int snapshots_collect(const char *data, long long keep, long long grace_s, struct snapshots_collected *out)
{
	char path[PATH_MAX + 32];
	memset(out, 0, sizeof(*out));
	/* The cut: nothing written since the oldest snapshot in the making
	 * began, nor within the grace, nor within the clocks' slack. */
	long long cut = oldest_hold(data, sbx_wall_ms()) - (grace_s * 1000 + CLOCK_SLACK_MS);

	snapshot_store_path(data, NULL, path, sizeof(path));
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int again = dir >= 0 ? dup(dir) : -1;
	DIR *d = again >= 0 ? fdopendir(again) : NULL;
	if (!d) {
		if (again >= 0)
			close(again);
		if (dir >= 0)
			close(dir);
		return dir >= 0 || errno != ENOENT ? -1 : 0;
	}
	struct mark k = { 0 };
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		if (manifest_name(de->d_name))
			rc = mark_one(&k, dir, de->d_name) < 0 ? -1 : 0;
		else if (leftover(de->d_name))
			out->objects += sweep_one(dir, de->d_name, cut, grace_s * 1000, &out->next_due_ms);
	}
	closedir(d);
	if (rc == 0)
		out->manifests = prune(&k, dir, keep);
	if (rc == 0 && out->manifests >= 0)
		out->objects += sweep(dir, &k, cut, grace_s * 1000, &out->next_due_ms);
	for (size_t i = 0; i < k.n; i++)
		free(k.m[i].key);
	free(k.m);
	free(k.sha);
	close(dir);
	return rc == 0 && out->manifests >= 0 ? 0 : -1;
}

/* collect: one pass, its counts on stdout. */
int ws_collect(const struct ws_opts *o, struct sbx_error *e)
{
	struct snapshots_collected done;
	if (snapshots_collect(o->data, o->keep, o->grace_s, &done) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "snapshot-collection",
			      "the remote snapshot store could not be read whole; nothing was collected");
		return -1;
	}
	printf("{\"manifests\":%lld,\"objects\":%lld,\"nextDueMs\":%lld}\n", done.manifests, done.objects,
	       done.next_due_ms);
	return 0;
}
