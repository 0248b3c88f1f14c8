/* snapshot_gc.h — collection of the remote snapshot store: sbx_snap_gc
 * with the per-key keep as the reflog keep and the grace as its min age,
 * then the index records whose version it dropped. */
#ifndef SBX_WS_SNAPSHOT_GC_H
#define SBX_WS_SNAPSHOT_GC_H

#include "../lib/error.h"

struct snapshots_collected {
	long long manifests;         /* snapshots dropped past the per-key retention */
	long long objects;           /* objects removed as unreached */
	long long next_due_ms;       /* wall clock when a spared object comes of age (0: none) */
};
/* One collection: per workspace key the newest `keep` snapshots stay (0:
 * all); every object nothing kept reaches, older than grace_s and pinned
 * by no snapshot being made, goes. 0, or -1 with e. */
int snapshots_collect(const char *data, long long keep, long long grace_s, struct snapshots_collected *out,
		      struct sbx_error *e);

#endif
