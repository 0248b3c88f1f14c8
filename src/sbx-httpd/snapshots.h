/* snapshots.h — the remote snapshot store (<data>/remote-snapshots): the
 * endpoints (snapshots.c) and its collection (snapshots_gc.c). */
#ifndef SBX_HTTPD_SNAPSHOTS_H
#define SBX_HTTPD_SNAPSHOTS_H

#include "httpd.h"

enum MHD_Result remote_snapshot_create(struct req *r);
enum MHD_Result remote_snapshot_file(struct req *r, const char *id);

/* A snapshot being made holds the store from before its first object to
 * after its manifest: collection spares every object written or replaced
 * since the oldest hold began (objects are always renamed into place, so
 * a reused one is a fresh inode). */
struct snapshots_hold {
	long long since_ms;          /* wall clock */
	struct snapshots_hold *next;
};
void snapshots_hold(struct snapshots_hold *h);
void snapshots_release(struct snapshots_hold *h);

struct snapshots_collected {
	long long manifests;         /* removed past the per-key retention */
	long long objects;           /* removed as unreferenced */
	long long next_due_ms;       /* wall clock when a spared object comes of age (0: none) */
};
/* One collection: per workspace key the newest `keep` manifests stay (0:
 * all), the older ones go; then every object (and leftover temporary
 * file) no kept manifest names, older than grace_s, goes. 0, or -1 when a
 * manifest could not be read (then nothing is removed). */
int snapshots_collect(long long keep, long long grace_s, struct snapshots_collected *out);

#endif
