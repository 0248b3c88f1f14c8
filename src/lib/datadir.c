/* datadir.c — the default data directory from the environment, and the
 * table of the areas below it. */
#include "datadir.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int fits(int n, size_t size)
{
	return n >= 0 && (size_t)n < size ? 0 : -1;
}

int sbx_data_dir(char *out, size_t size)
{
	const char *v;

	if ((v = getenv("SBX_DATA_DIR")) && *v)
		return fits(snprintf(out, size, "%s", v), size);
	if ((v = getenv("SCIENCE_AGENT_DATA_DIR")) && *v)
		return fits(snprintf(out, size, "%s", v), size);
	if (geteuid() == 0)
		return fits(snprintf(out, size, "/var/lib/sbx"), size);
	if ((v = getenv("XDG_STATE_HOME")) && *v == '/')
		return fits(snprintf(out, size, "%s/sbx", v), size);
	if ((v = getenv("HOME")) && *v == '/')
		return fits(snprintf(out, size, "%s/.local/state/sbx", v), size);
	return fits(snprintf(out, size, "/tmp/sbx-%u", (unsigned)geteuid()), size);
}

const struct sbx_data_area_entry sbx_data_layout[SBX_DATA_AREAS] = {
	[SBX_DATA_CACHE] = { "cache", "sbx-probe, sbx-npu", "probe records and accelerator listings" },
	[SBX_DATA_WORKSPACE_UIDS] = { "workspace-uids", "sbx-run", "the registry of per-workspace uids" },
	[SBX_DATA_EXECUTIONS] = { "executions", "sbx-run", "runs, leases and the snapshot store of sbx-run run by hand" },
	[SBX_DATA_EGRESS] = { "eg", "sbx-run", "per-revision egress gateway sockets and logs" },
	[SBX_DATA_PROJECTS] = { "projects", "sbx-httpd", "project workspaces" },
	[SBX_DATA_REMOTE_WORKSPACES] = { "remote-workspaces", "sbx-ws", "remote workspaces by key" },
	[SBX_DATA_REMOTE_SNAPSHOTS] = { "remote-snapshots", "sbx-ws", "remote workspace snapshots: an sbx-snap store, a ref per key, an index by id" },
	[SBX_DATA_RUNNER_EXECUTIONS] = { "runner-executions", "sbx-httpd", "executions.sqlite, and runs/: sbx-run's state" },
	[SBX_DATA_VERSIONING] = { "versioning", "sbx-run, sbx-snap, sbx-ws", "the snapshot store of workspaces run through sbx-httpd, and their histories" },
	[SBX_DATA_RUNNER_UPLOADS] = { "runner-uploads", "sbx-httpd, sbx-ws", "streamed uploads being staged" },
	[SBX_DATA_SKILL_PACKAGES] = { "skill-packages", "sbx-skills", "held skill packages and their verification stamps" },
	[SBX_DATA_SCIENTIFIC_ENVS] = { "scientific-envs", "sbx-env", "managed environments, the catalog, setup state, locks" },
	[SBX_DATA_NPU_JOBS] = { "npu-jobs", "sbx-broker", "NPU job records, homes and logs" },
	[SBX_DATA_SECRETS] = { "secrets", "sbx-secrets", "secrets an egress gateway injects: one 0600 file each, 0700" },
};

int sbx_data_path(const char *data, enum sbx_data_area area, const char *leaf, char *out, size_t size)
{
	return fits(snprintf(out, size, "%s/%s%s%s", data, sbx_data_layout[area].name, leaf ? "/" : "",
			     leaf ? leaf : ""), size);
}
