/* snapshot_gc.h — holds on the remote snapshot store while a snapshot is
 * made, and its collection (per key retention, then unreferenced objects). */
#ifndef SBX_WS_SNAPSHOT_GC_H
#define SBX_WS_SNAPSHOT_GC_H

#include "../lib/error.h"

/* A snapshot being made holds the store from before its first object to
 * after its manifest: collection (another process, maybe) spares every
 * object written or replaced since the oldest live hold began (objects are
 * always renamed into place, so a reused one is a fresh inode). A hold is
 * a file in <store>/holds flocked by its maker; its mtime is when it began. */
struct snapshot_hold {
	int fd;
	char path[4200];
};
int snapshot_hold(const char *data, struct snapshot_hold *h, struct sbx_error *e);
void snapshot_release(struct snapshot_hold *h);

struct snapshots_collected {
	long long manifests;         /* removed past the per-key retention */
	long long objects;           /* removed as unreferenced */
	long long next_due_ms;       /* wall clock when a spared object comes of age (0: none) */
};
/* One collection: per workspace key the newest `keep` manifests stay (0:
 * all), the older ones go; then every object (and leftover temporary
 * file) no kept manifest names, older than grace_s, goes. 0, or -1 when a
 * manifest could not be read (then nothing is removed). */
int snapshots_collect(const char *data, long long keep, long long grace_s, struct snapshots_collected *out);

#endif
