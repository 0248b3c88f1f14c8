/* snapshot.h — the remote snapshot store (<data>/remote-snapshots): a
 * manifest <id>.json per snapshot, objects/<sha256> for contents; made
 * and read by snapshot.c, held and collected by snapshot_gc.c. */
#ifndef SBX_WS_SNAPSHOT_H
#define SBX_WS_SNAPSHOT_H

#include "../lib/datadir.h"
#include "../lib/error.h"

#include <stddef.h>


#endif
