/* npu_chips.h — an execution's "chips" field: host indices (0..1023, at
 * most 64), sorted and unique; checked by sbx-httpd and by sbx-run. */
#ifndef SBX_NPU_CHIPS_H
#define SBX_NPU_CHIPS_H

#include "error.h"

#include <jansson.h>

#define SBX_NPU_MAX_CHIPS 64
#define SBX_NPU_MAX_INDEX 1023

/* chips: a JSON array of host indices, named field in errors. Sorted and
 * de-duplicated into out (room for SBX_NPU_MAX_CHIPS); the count or -1. */
int sbx_npu_chip_list(const json_t *chips, const char *field, int *out, struct sbx_error *e);

#endif
