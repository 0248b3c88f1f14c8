/* probe_cache.h — the probe as every stage calls it: answered from a cache
 * keyed by the host's shape (bwrap, kernel, caller class), probed at most
 * once at a time. */
#ifndef SBX_PROBE_CACHE_H
#define SBX_PROBE_CACHE_H

#include "error.h"
#include "run_as.h"

#include <jansson.h>
#include <stdbool.h>

#define SBX_PROBE_UNUSABLE_TTL 60 /* seconds an "unusable" answer is kept */

struct sbx_probe_request {
	const char *bwrap;     /* NULL: $SBX_BWRAP, $SCIENCE_AGENT_BWRAP_PATH, bwrap */
	const char *cache_dir; /* NULL: <data dir>/cache; "" : no cache */
	bool refresh;          /* ignore a cached answer (a fresh one is stored) */
	int timeout_ms;        /* per probe sandbox; 0: SBX_PROBE_TIMEOUT_MS */
	/* NULL: probe as the caller. A root caller's switch_user: the answer
	 * for the unprivileged uid the sandbox will run as (probed by a child
	 * that drops to it), cached once for every uid of the range. */
	const struct sbx_run_as *as;
};

/* The probe answer (see sbx-probe(1)) with "cached" set. Never NULL: a
 * cache that cannot be used is reported through warn_cb-free diagnostics
 * (sbx_diag) and the probe runs uncached. */
json_t *sbx_probe(const struct sbx_probe_request *req);

#endif
