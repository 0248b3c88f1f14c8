/* npu_chips.c — an execution's "chips" field, the contract sbx-httpd
 * checks at the door and sbx-run again: host indices, sorted and unique. */
#include "npu_chips.h"
#include "exitcodes.h"

#include <stdlib.h>

static int ascending(const void *a, const void *b)
{
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

int sbx_npu_chip_list(const json_t *chips, const char *field, int *out, struct sbx_error *e)
{
	size_t i, n = 0;
	json_t *v;

	if (!json_is_array(chips)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "%s: must be an array of device indices", field);
		return -1;
	}
	if (json_array_size(chips) > SBX_NPU_MAX_CHIPS) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "%s: at most %d devices", field, SBX_NPU_MAX_CHIPS);
		return -1;
	}
	json_array_foreach(chips, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > SBX_NPU_MAX_INDEX) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "%s[%zu]: must be an integer from 0 to %d", field, i,
				      SBX_NPU_MAX_INDEX);
			return -1;
		}
		out[n++] = (int)json_integer_value(v);
	}
	qsort(out, n, sizeof(*out), ascending);
	size_t w = 0;
	for (i = 0; i < n; i++)
		if (w == 0 || out[w - 1] != out[i])
			out[w++] = out[i];
	return (int)w;
}
