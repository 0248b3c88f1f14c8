/* exitcodes.c — names, meanings and failure classes of the shared exit
 * codes: one table, read by --help, the man pages and every result. */
#include "exitcodes.h"

const struct sbx_exit_entry sbx_exit_table[] = {
	{ SBX_EXIT_OK, "ok", "success", NULL },
	{ SBX_EXIT_WORKLOAD, "workload-failed", "the workload ran and failed", "user" },
	{ SBX_EXIT_USAGE, "usage", "usage error or bad input (nothing was changed)", "user" },
	{ SBX_EXIT_POLICY, "refused", "refused by policy", "policy" },
	{ SBX_EXIT_NO_SANDBOX, "no-sandbox", "this environment cannot build a sandbox", "infra" },
	{ SBX_EXIT_INTERNAL, "internal", "internal error", "infra" },
	{ SBX_EXIT_RESOURCE, "resource-exhausted", "a quota or resource limit was crossed", "resource-exhausted" },
	{ SBX_EXIT_TIMEOUT, "timeout", "the deadline passed", "timeout" },
	{ SBX_EXIT_VIOLATION, "sandbox-violation", "the workload broke the supervisor protocol", "sandbox-violation" },
	{ SBX_EXIT_INTEGRITY, "integrity", "stored state failed its integrity check", "integrity" },
	{ SBX_EXIT_CANCELLED, "cancelled", "cancelled by a signal or sbx-run cancel", "cancelled" },
};
const size_t sbx_exit_table_len = sizeof(sbx_exit_table) / sizeof(sbx_exit_table[0]);

const char *sbx_exit_name(int code)
{
	for (size_t i = 0; i < sbx_exit_table_len; i++)
		if (sbx_exit_table[i].code == code)
			return sbx_exit_table[i].name;
	return "unknown";
}

const char *sbx_exit_failure_class(int code)
{
	if (code == SBX_EXIT_OK)
		return NULL;
	for (size_t i = 0; i < sbx_exit_table_len; i++)
		if (sbx_exit_table[i].code == code)
			return sbx_exit_table[i].failure_class;
	return "infra";
}
