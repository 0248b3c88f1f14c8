/* snapshot_gc.c — collection of the remote snapshot store: one sbx_snap_gc
 * (each key's ref keeps the last `keep` versions of its reflog; an object
 * nothing kept reaches goes once older than the grace, unless a snapshot
 * being made pins it), then the index records of the snapshots it dropped:
 * those naming a version its key's reflog no longer holds, or a manifest
 * no longer stored. */
#include "ws.h"
#include "snapshot_gc.h"
#include "snapshot.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/map.h"
#include "../lib/snap_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct record {
	char name[48];             /* <id>.json */
	char *key, captured[32], digest[72];
};

/* Per key (so one reflog is read per key), newest first. */
static int by_key_newest(const void *a, const void *b)
{
	const struct record *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	if (!c)
		c = strcmp(y->captured, x->captured);
	return c ? c : strcmp(y->name, x->name);
}

/* Whether the key's reflog (as collection left it) still holds digest. */
static bool version_kept(const char *store, const char *key, const char *digest, json_t **log, const char **log_key)
{
	if (!*log_key || strcmp(*log_key, key) != 0) {
		char ref[80];
		struct sbx_error ignored;
		snapshot_ref(key, ref);
		json_decref(*log);
		*log = sbx_snap_log(store, ref, &ignored);
		*log_key = key;
	}
	size_t i;
	json_t *row;
	json_array_foreach(*log, i, row)
		if (!strcmp(sbx_json_string_or(row, "digest", ""), digest))
			return true;
	return false;
}

/* The index records past retention go; their count. */
static long long prune_index(const char *store)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/" SNAPSHOT_INDEX_DIR, store);
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dir >= 0 ? fdopendir(dup(dir)) : NULL;
	if (!d) {
		if (dir >= 0)
			close(dir);
		return 0;
	}
	struct record *v = NULL;
	size_t n = 0, cap = 0;
	for (struct dirent *de; (de = readdir(d));) {
		size_t len = strlen(de->d_name);
		if (len != 41 || strcmp(de->d_name + 36, ".json") != 0)
			continue;
		char id[37];
		memcpy(id, de->d_name, 36);
		id[36] = '\0';
		if (!snapshot_id_like(id))
			continue;
		struct sbx_error ignored;
		snprintf(path, sizeof(path), "%s/" SNAPSHOT_INDEX_DIR "/%s", store, de->d_name);
		json_t *rec = sbx_json_load(path, SNAPSHOT_INDEX_MAX, &ignored);
		const char *key = sbx_json_string_or(rec, "workspace", NULL), *at = sbx_json_string_or(rec, "capturedAt", NULL),
			   *digest = sbx_json_string_or(rec, "digest", NULL);
		if (key && at && digest && strlen(at) < 32 && sbx_snap_valid_digest(digest)) {
			if (n == cap) {
				size_t c2 = cap ? cap * 2 : 64;
				struct record *g = realloc(v, c2 * sizeof(*v));
				if (!g) {
					json_decref(rec);
					break;
				}
				v = g;
				cap = c2;
			}
			struct record *r = &v[n];
			snprintf(r->name, sizeof(r->name), "%s", de->d_name);
			snprintf(r->captured, sizeof(r->captured), "%s", at);
			snprintf(r->digest, sizeof(r->digest), "%s", digest);
			if ((r->key = strdup(key)))
				n++;
		}
		json_decref(rec);
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), by_key_newest);
	/* A record goes when its version left the key's reflog (collection
	 * trimmed it to the newest keep) or its manifest is gone: the reflog's
	 * order, the order the ref moved in, is the one that counts, never
	 * capturedAt (two snapshots of a key made at once may be stamped in the
	 * other order). */
	long long removed = 0;
	json_t *log = NULL;
	const char *log_key = NULL;
	for (size_t i = 0; i < n; i++) {
		char obj[PATH_MAX];
		struct stat st;
		bool gone = !version_kept(store, v[i].key, v[i].digest, &log, &log_key) ||
			    sbx_snap_object_path(store, v[i].digest, obj, sizeof(obj)) != 0 || stat(obj, &st) != 0;
		if (gone && (unlinkat(dir, v[i].name, 0) == 0 || errno == ENOENT))
			removed++;
	}
	json_decref(log);
	for (size_t i = 0; i < n; i++)
		free(v[i].key);
	free(v);
	close(dir);
	return removed;
}

int snapshots_collect(const char *data, long long keep, long long grace_s, struct snapshots_collected *out,
		      struct sbx_error *e)
{
	char store[PATH_MAX], objects[PATH_MAX + 16];
	struct stat st;
	memset(out, 0, sizeof(*out));
	snapshot_store_path(data, NULL, store, sizeof(store));
	snprintf(objects, sizeof(objects), "%s/objects", store);
	if (stat(objects, &st) != 0 && errno == ENOENT)
		return 0; /* no snapshot yet */
	struct sbx_snap_gc_opts go = { .keep = (unsigned)keep, .min_age_s = (unsigned)grace_s, .lock_fd = -1 };
	json_t *receipt = sbx_snap_gc(store, &go, e);
	if (!receipt)
		return -1;
	out->objects = json_integer_value(json_object_get(receipt, "removed"));
	out->next_due_ms = json_integer_value(json_object_get(receipt, "nextDueMs"));
	json_decref(receipt);
	out->manifests = prune_index(store);
	return 0;
}

/* collect: one pass, its counts on stdout. */
int ws_collect(const struct ws_opts *o, struct sbx_error *e)
{
	struct snapshots_collected done;
	if (snapshots_collect(o->data, o->keep, o->grace_s, &done, e) != 0) {
		char why[sizeof(e->message)];
		snprintf(why, sizeof(why), "%s", e->message);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "snapshot-collection",
			      "the remote snapshot store could not be collected: %.900s", why);
		return -1;
	}
	printf("{\"manifests\":%lld,\"objects\":%lld,\"nextDueMs\":%lld}\n", done.manifests, done.objects,
	       done.next_due_ms);
	return 0;
}
