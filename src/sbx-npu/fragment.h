/* fragment.h — the launch spec's `devices` member for chosen chips
 * (sbx-formats(5)): device nodes renumbered from 0 in ascending host
 * order, the management nodes the host has, read-only files, and the
 * environment --clearenv would otherwise wipe. */
#ifndef SBX_NPU_FRAGMENT_H
#define SBX_NPU_FRAGMENT_H

#include "host_paths.h"

#include <jansson.h>
#include <stddef.h>

/* chips: host indices, ascending and unique. Returns {vendor, hostIndices,
 * nodes:[{host, sandbox}], readOnly:[path], env:{}, pathPrefix?}. */
json_t *sbx_npu_fragment(const struct sbx_npu_config *cfg, const int *chips, size_t n);
/* The device node of host index i ("<dev_root>/davinci<i>", ".../nvidia<i>"). */
void sbx_npu_node_path(const struct sbx_npu_config *cfg, int index, char *out, size_t size);
/* The status tool's argv inside a probe: npu-smi info, or nvidia-smi. */
json_t *sbx_npu_probe_argv(const struct sbx_npu_config *cfg);

#endif
