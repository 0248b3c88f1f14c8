/* snapshot.h — the remote snapshot store (<data>/remote-snapshots): an
 * sbx-snap store (snap_store.h) holding, per workspace key, the ref
 * remote-<sha256 of the key> whose versions are that key's snapshots
 * (each a manifest of exactly the selected files), and index/<id>.json
 * mapping a snapshot id to {id, workspace, capturedAt, digest}. Made and
 * read by snapshot.c, collected by snapshot_gc.c. */
#ifndef SBX_WS_SNAPSHOT_H
#define SBX_WS_SNAPSHOT_H

#include "../lib/datadir.h"
#include "../lib/error.h"

#include <stddef.h>

#define SNAPSHOT_INDEX_DIR "index"
#define SNAPSHOT_INDEX_MAX (64u << 10) /* an index record's bytes */

/* The ref of a (validated) key: "remote-<sha256 hex of the key>". */
void snapshot_ref(const char *key, char out[80]);
/* Whether id looks like the UUID a snapshot gets. */
bool snapshot_id_like(const char *id);

#endif
