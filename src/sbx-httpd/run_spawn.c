/* run_spawn.c — the one command line sbx-httpd starts sbx-run with: its
 * state, snapshot store and egress areas of the data dir, for a run now or
 * a standby that waits for one. */
#include "runner.h"
#include "../lib/datadir.h"
#include "../lib/spawn.h"
#include "server.h"
#include "config.h"

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include <stdio.h>

pid_t runner_spawn(bool standby, int stdin_fd, int stdout_fd, int stderr_fd, const int *fds, size_t n_fds,
		   struct sbx_error *e)
{
	const struct config *cfg = &g_server.cfg;
	char state[PATH_MAX + 32], store[PATH_MAX + 32], egress[PATH_MAX + 32], secrets[PATH_MAX + 32], grace[16];
	sbx_data_path(cfg->data_dir, SBX_DATA_RUNNER_EXECUTIONS, "runs", state, sizeof(state));
	sbx_data_path(cfg->data_dir, SBX_DATA_VERSIONING, NULL, store, sizeof(store));
	sbx_data_path(cfg->data_dir, SBX_DATA_EGRESS, NULL, egress, sizeof(egress));
	sbx_data_path(cfg->data_dir, SBX_DATA_SECRETS, NULL, secrets, sizeof(secrets));
	snprintf(grace, sizeof(grace), "%d", RUNNER_GRACE_MS);
	/* Run directories kept for a while (SCIENCE_AGENT_RUN_RETENTION_SECONDS)
	 * hold result.json and launch-spec.json; others go unread. */
	const char *argv[16] = { g_server.prog.run, "--state-dir", state, "--snapshot-store", store, "--egress-dir",
				 egress, "--secrets-dir", secrets, "--grace-ms", grace, "--output-by-reference" };
	size_t n = 12;
	if (!cfg->run_retention_s)
		argv[n++] = "--transient";
	argv[n++] = standby ? "--standby" : "-";
	struct sbx_spawn s = { .argv = argv, .stdin_fd = stdin_fd, .stdout_fd = stdout_fd, .stderr_fd = stderr_fd,
			       .extra_fds = fds, .n_extra = n_fds, .die_with_parent = true };
	return sbx_spawn_start(&s, NULL, e);
}
