/* npu_select.h — an execution's chips, re-probed right before it runs:
 * every requested chip usable, or the execution is refused naming each
 * chip that is not. A run never proceeds on fewer chips than it asked. */
#ifndef SBX_NPU_SELECT_H
#define SBX_NPU_SELECT_H

#include "error.h"
#include "npu_config.h"

#include <jansson.h>
#include <stddef.h>

#define SBX_NPU_MAX_CHIPS 64
#define SBX_NPU_MAX_INDEX 1023

/* chips: a JSON array of host indices (0..1023, at most 64), named field
 * in errors. Sorted and de-duplicated into out; returns the count or -1. */
int sbx_npu_chip_list(const json_t *chips, const char *field, int *out, struct sbx_error *e);
/* Probes exactly chips (sorted, unique) and returns the launch fragment;
 * NULL with an error (exit 3, "npu-unavailable") listing every refusal. */
json_t *sbx_npu_select(const struct sbx_npu_config *cfg, const int *chips, size_t n, struct sbx_error *e);

#endif
