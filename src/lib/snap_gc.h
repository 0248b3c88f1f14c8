/* snap_gc.h — the parts of a collection (snap_gc.c): what its barrier
 * decides under the store's exclusive lock (snap_retain.c: refs, reflogs
 * trimmed to the versions kept, stat caches) and the live runs' pins
 * (snap_pin.c). */
#ifndef SBX_SNAP_GC_H
#define SBX_SNAP_GC_H

#include "map.h"

#include <stddef.h>
#include <stdint.h>

struct snap_retained {
	struct sbx_map manifests; /* digests of the snapshots kept */
	uint64_t versions_dropped, caches_dropped;
};

/* Under the exclusive lock: every ref's target and the last keep entries
 * of its reflog (0: all) into r->manifests, each reflog rewritten without
 * the older ones; stat caches whose snapshot is not kept removed. */
void snap_retain(const char *store, unsigned keep, struct snap_retained *r);

struct snap_pins {
	int *fds;
	size_t n, cap;
};

/* Under the exclusive lock: pins whose run is gone (no flock) removed,
 * the others held open. */
void snap_pins_hold(const char *store, struct snap_pins *p);
/* Later: the held pins' digests into live; closes them. */
void snap_pins_mark(struct snap_pins *p, struct sbx_map *live);

#endif
