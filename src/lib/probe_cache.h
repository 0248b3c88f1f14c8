/* probe_cache.h — the probe as every stage calls it: answered from a cache
 * keyed by the bwrap binary and the uid, probed at most once at a time. */
#ifndef SBX_PROBE_CACHE_H
#define SBX_PROBE_CACHE_H

#include "error.h"

#include <jansson.h>
#include <stdbool.h>

#define SBX_PROBE_UNUSABLE_TTL 60 /* seconds an "unusable" answer is kept */

struct sbx_probe_request {
	const char *bwrap;     /* NULL: $SBX_BWRAP, $SCIENCE_AGENT_BWRAP_PATH, bwrap */
	const char *cache_dir; /* NULL: <data dir>/cache; "" : no cache */
	bool refresh;          /* ignore a cached answer (a fresh one is stored) */
	int timeout_ms;        /* per probe sandbox; 0: SBX_PROBE_TIMEOUT_MS */
};

/* The probe answer (see sbx-probe(1)) with "cached" set. Never NULL: a
 * cache that cannot be used is reported through warn_cb-free diagnostics
 * (sbx_diag) and the probe runs uncached. */
json_t *sbx_probe(const struct sbx_probe_request *req);

#endif
