/* inventory.h — what accelerators this host has and whether a sandbox
 * can open each: the vendor's sources in order (Ascend: DCMI, then
 * npu-smi; NVIDIA: the driver's proc tree and nvidia-smi), a probe per
 * chip in a real launch shape, and a 60 s cache that never keeps failures. */
#ifndef SBX_NPU_INVENTORY_H
#define SBX_NPU_INVENTORY_H

#include "../lib/error.h"
#include "host_paths.h"

#include <jansson.h>
#include <stdbool.h>

#define SBX_NPU_CACHE_TTL_S 60

/* {supported, source, devices, error?, capturedAt}, without probes. */
json_t *sbx_npu_inventory_read(const struct sbx_npu_config *cfg);
/* Sets sandboxUsable / sandboxUnusableReason on every device, probing
 * them concurrently. */
void sbx_npu_probe_devices(const struct sbx_npu_config *cfg, json_t *devices);
/* The listing with probes: from <cache_dir>/npu-<key>.json when younger
 * than 60 s and refresh is false; a fresh one is cached unless it failed. */
json_t *sbx_npu_inventory(const struct sbx_npu_config *cfg, const char *cache_dir, bool refresh);

#endif
