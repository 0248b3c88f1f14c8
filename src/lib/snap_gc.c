/* snap_gc.c — collection that holds up no run for long. A barrier under
 * the store's exclusive lock (no commit or store in flight) applies the
 * retention policy, takes the live runs' pins and stamps the start; the
 * marking runs unlocked; the sweep removes, in short exclusive batches,
 * objects nothing kept reaches that are older than the barrier (every
 * object written or reused after it is newer: publish freshens). */
#include "snap_store.h"
#include "snap_gc.h"
#include "atomic_file.h"
#include "clock.h"
#include "exitcodes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BATCH 256           /* removals per exclusive hold */
#define READ_CHUNK (1u << 20)
#define KEY "\"digest\":\"sha256:"
#define KEY_LEN (sizeof(KEY) - 1)

/* The digests a manifest names, read in chunks (a canonical manifest
 * escapes every '"' inside a string, so the key occurs only as a key). */
static void mark_tree(const char *store, const char *digest, struct sbx_map *live)
{
	char path[PATH_MAX], d[72];
	bool seen = false;
	if (!sbx_map_put(live, digest, strlen(digest), NULL, &seen) || seen ||
	    sbx_snap_object_path(store, digest, path, sizeof(path)) != 0)
		return;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char *buf = fd >= 0 ? malloc(READ_CHUNK + KEY_LEN + 64) : NULL;
	size_t have = 0;
	ssize_t n;
	while (buf && (n = read(fd, buf + have, READ_CHUNK)) > 0) {
		have += (size_t)n;
		char *p = buf, *end = buf + have, *cut = NULL, *q;
		while ((q = memmem(p, (size_t)(end - p), KEY, KEY_LEN))) {
			if ((size_t)(end - q) < KEY_LEN + 64) {
				cut = q; /* the digest goes on in the next chunk */
				break;
			}
			snprintf(d, sizeof(d), "sha256:%.64s", q + KEY_LEN);
			if (sbx_snap_valid_digest(d))
				sbx_map_put(live, d, strlen(d), NULL, NULL);
			p = q + KEY_LEN + 64;
		}
		/* What may start a key cut by the chunk's end is read again. */
		if (!cut)
			cut = (size_t)(end - p) > KEY_LEN - 1 ? end - (KEY_LEN - 1) : p;
		have = (size_t)(end - cut);
		memmove(buf, cut, have);
	}
	free(buf);
	if (fd >= 0)
		close(fd);
}

static bool older(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

struct sweep {
	const char *store;
	const struct sbx_map *live;
	struct timespec cutoff;
	long long removed, kept, freed, longest_hold_ms;
	long long min_age_ms, next_due_ms; /* when the first object spared as too young comes of age (0: none) */
};

/* Removes the named candidates of one objects/<xx>/ under the exclusive
 * lock, each only if still older than the cutoff. */
static void remove_batch(struct sweep *s, int dfd, char (*names)[64], size_t n)
{
	struct sbx_error ignored;
	int lock = sbx_snap_lock(s->store, true, &ignored);
	if (lock < 0) {
		s->kept += (long long)n;
		return;
	}
	long long t0 = sbx_mono_ms();
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISREG(st.st_mode) && older(&st.st_mtim, &s->cutoff) && unlinkat(dfd, names[i], 0) == 0) {
			s->removed++;
			s->freed += st.st_size;
		} else {
			s->kept++;
			if (S_ISREG(st.st_mode) && !older(&st.st_mtim, &s->cutoff)) {
				long long due = (long long)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000 +
						s->min_age_ms + 1000; /* file times are coarse */
				if (!s->next_due_ms || due < s->next_due_ms)
					s->next_due_ms = due;
			}
		}
	}
	long long held = sbx_mono_ms() - t0;
	if (held > s->longest_hold_ms)
		s->longest_hold_ms = held;
	close(lock);
}

static void sweep_dir(struct sweep *s, int top, const char *sub)
{
	char names[BATCH][64];
	size_t n = 0;
	int fd = openat(top, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	for (struct dirent *de; d && (de = readdir(d));) {
		char digest[80];
		if (de->d_name[0] == '.')
			continue;
		/* Anything not named like an object is left alone. */
		if (snprintf(digest, sizeof(digest), "sha256:%s%s", sub, de->d_name) >= (int)sizeof(digest) ||
		    !sbx_snap_valid_digest(digest) || sbx_map_has(s->live, digest, strlen(digest))) {
			s->kept++;
			continue;
		}
		memcpy(names[n++], de->d_name, 63); /* 62 hex and the NUL: checked above */
		if (n == BATCH) {
			remove_batch(s, fd, names, n);
			n = 0;
		}
	}
	if (n)
		remove_batch(s, fd, names, n);
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
}

static int open_gc_lock(const char *store, bool wait, struct sbx_error *e)
{
	return sbx_snap_lockfile(store, "gc.lock", wait ? LOCK_EX : LOCK_EX | LOCK_NB, e);
}

int sbx_snap_gc_claim(const char *store, unsigned interval_s)
{
	struct sbx_error ignored;
	struct stat st;
	char objects[PATH_MAX];
	snprintf(objects, sizeof(objects), "%s/objects", store);
	if (stat(objects, &st) != 0) /* no store (yet): nothing to collect */
		return -1;
	int fd = open_gc_lock(store, false, &ignored);
	if (fd < 0)
		return -1;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	/* Made just now: a store's first collection is one interval on. A
	 * stamp from the future (the clock went back) is due. */
	bool due = fstat(fd, &st) == 0 && (interval_s == 0 || now.tv_sec - st.st_mtim.tv_sec >= (time_t)interval_s ||
					   st.st_mtim.tv_sec > now.tv_sec + 60);
	if (!due || futimens(fd, NULL) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

json_t *sbx_snap_gc(const char *store, const struct sbx_snap_gc_opts *o, struct sbx_error *e)
{
	struct snap_retained kept;
	struct snap_pins pins = { 0 };
	struct sweep s = { .store = store, .min_age_ms = (long long)o->min_age_s * 1000 };
	struct sbx_map live;
	struct stat st;
	char path[PATH_MAX];
	long long t0 = sbx_mono_ms();

	int gc = o->lock_fd >= 0 ? o->lock_fd : open_gc_lock(store, true, e);
	if (gc < 0)
		return NULL;
	/* A given fd must be this store's gc.lock, flocked by its holder. */
	struct stat given;
	snprintf(path, sizeof(path), "%s/gc.lock", store);
	if (gc == o->lock_fd && (fstat(gc, &given) != 0 || stat(path, &st) != 0 || given.st_dev != st.st_dev ||
				 given.st_ino != st.st_ino || flock(gc, LOCK_EX | LOCK_NB) != 0)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-lock-fd", "--lock-fd %d is not %s, held", gc, path);
		return NULL;
	}
	/* The barrier. */
	int lock = sbx_snap_lock(store, true, e);
	if (lock < 0) {
		if (gc != o->lock_fd)
			close(gc);
		return NULL;
	}
	long long barrier_t0 = sbx_mono_ms();
	if (futimens(gc, NULL) != 0 || fstat(gc, &st) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "store-unusable", "%s/gc.lock: %s", store, strerror(errno));
		close(lock);
		if (gc != o->lock_fd)
			close(gc);
		return NULL;
	}
	/* The store's own clock: what is written or freshened from here on is
	 * no older than this stamp. */
	s.cutoff = st.st_mtim;
	s.cutoff.tv_sec -= (time_t)o->min_age_s;
	snap_retain(store, o->keep, &kept);
	snap_pins_hold(store, &pins);
	long long barrier_ms = sbx_mono_ms() - barrier_t0;
	close(lock);

	/* Marking, unlocked: nothing kept at the barrier goes, and nothing newer. */
	sbx_map_init(&live);
	for (size_t i = 0; kept.manifests.slots && i < kept.manifests.cap; i++) {
		const struct sbx_map_slot *slot = &kept.manifests.slots[i];
		char digest[72];
		if (!slot->key || slot->key_len >= sizeof(digest))
			continue;
		memcpy(digest, slot->key, slot->key_len); /* keys are not NUL-terminated */
		digest[slot->key_len] = '\0';
		mark_tree(store, digest, &live);
	}
	size_t pinned_runs = pins.n;
	snap_pins_mark(&pins, &live);
	s.live = &live;
	snprintf(path, sizeof(path), "%s/objects", store);
	int top = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = top >= 0 ? fdopendir(top) : NULL;
	for (struct dirent *sub; d && (sub = readdir(d));)
		if (strlen(sub->d_name) == 2 && sub->d_name[0] != '.')
			sweep_dir(&s, dirfd(d), sub->d_name);
	if (d)
		closedir(d);
	else if (top >= 0)
		close(top);
	sbx_map_free(&live, NULL);
	sbx_map_free(&kept.manifests, NULL);
	json_t *receipt = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "removed", (json_int_t)s.removed,
				    "kept", (json_int_t)s.kept, "bytesFreed", (json_int_t)s.freed,
				    "versionsDropped", (json_int_t)kept.versions_dropped,
				    "statCachesDropped", (json_int_t)kept.caches_dropped, "pinnedRuns", (json_int_t)pinned_runs,
				    "barrierMs", (json_int_t)barrier_ms, "longestBatchMs", (json_int_t)s.longest_hold_ms,
				    "durationMs", (json_int_t)(sbx_mono_ms() - t0));
	if (receipt)
		json_object_set_new(receipt, "nextDueMs", json_integer(s.next_due_ms));
	char *text = receipt ? json_dumps(receipt, JSON_COMPACT) : NULL;
	struct sbx_error ignored;
	snprintf(path, sizeof(path), "%s/gc.json", store);
	if (text)
		sbx_atomic_replace(path, text, strlen(text), 0600, false, &ignored);
	free(text);
	if (gc != o->lock_fd)
		close(gc);
	return receipt;
}
