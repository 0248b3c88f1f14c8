/* exitcodes.c — names and meanings of the shared exit codes. */
#include "exitcodes.h"

const struct sbx_exit_entry sbx_exit_table[] = {
	{ SBX_EXIT_OK, "ok", "success" },
	{ SBX_EXIT_WORKLOAD, "workload-failed", "the workload ran and failed" },
	{ SBX_EXIT_USAGE, "usage", "usage error or bad input (nothing was changed)" },
	{ SBX_EXIT_POLICY, "refused", "refused by policy" },
	{ SBX_EXIT_NO_SANDBOX, "no-sandbox", "this environment cannot build a sandbox" },
	{ SBX_EXIT_INTERNAL, "internal", "internal error" },
};
const size_t sbx_exit_table_len = sizeof(sbx_exit_table) / sizeof(sbx_exit_table[0]);

const char *sbx_exit_name(int code)
{
	for (size_t i = 0; i < sbx_exit_table_len; i++)
		if (sbx_exit_table[i].code == code)
			return sbx_exit_table[i].name;
	return "unknown";
}
