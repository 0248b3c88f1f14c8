/* exitcodes.c — names and meanings of the shared exit codes. */
#include "exitcodes.h"

const struct sbx_exit_entry sbx_exit_table[] = {
	{ SBX_EXIT_OK, "ok", "success" },
	{ SBX_EXIT_WORKLOAD, "workload-failed", "the workload ran and failed" },
	{ SBX_EXIT_USAGE, "usage", "usage error or bad input (nothing was changed)" },
	{ SBX_EXIT_POLICY, "refused", "refused by policy" },
	{ SBX_EXIT_NO_SANDBOX, "no-sandbox", "this environment cannot build a sandbox" },
	{ SBX_EXIT_INTERNAL, "internal", "internal error" },
	{ SBX_EXIT_RESOURCE, "resource-exhausted", "a quota or resource limit was crossed" },
	{ SBX_EXIT_TIMEOUT, "timeout", "the deadline passed" },
	{ SBX_EXIT_VIOLATION, "sandbox-violation", "the workload broke the supervisor protocol" },
	{ SBX_EXIT_INTEGRITY, "integrity", "stored state failed its integrity check" },
	{ SBX_EXIT_CANCELLED, "cancelled", "cancelled by a signal or sbx-run cancel" },
};
const size_t sbx_exit_table_len = sizeof(sbx_exit_table) / sizeof(sbx_exit_table[0]);

const char *sbx_exit_name(int code)
{
	for (size_t i = 0; i < sbx_exit_table_len; i++)
		if (sbx_exit_table[i].code == code)
			return sbx_exit_table[i].name;
	return "unknown";
}
