/* select.h — an execution's chips, re-probed right before it runs:
 * every requested chip usable, or the execution is refused naming each
 * chip that is not. A run never proceeds on fewer chips than it asked. */
#ifndef SBX_NPU_SELECT_H
#define SBX_NPU_SELECT_H

#include "../lib/error.h"
#include "../lib/npu_chips.h"
#include "host_paths.h"

#include <jansson.h>
#include <stddef.h>

/* Probes exactly chips (sorted, unique) and returns the launch fragment;
 * NULL with an error (exit 3, "npu-unavailable") listing every refusal. */
json_t *sbx_npu_select(const struct sbx_npu_config *cfg, const int *chips, size_t n, struct sbx_error *e);

#endif
