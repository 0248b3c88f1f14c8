/* datadir.h — where sbx keeps state when no flag says otherwise, and the
 * data directory's layout: every area below it, the stage that owns it
 * and what it holds, in one table (sbx-formats(5) prints the same). */
#ifndef SBX_DATADIR_H
#define SBX_DATADIR_H

#include <stddef.h>

/* $SBX_DATA_DIR, else $SCIENCE_AGENT_DATA_DIR, else /var/lib/sbx for root,
 * else ${XDG_STATE_HOME:-$HOME/.local/state}/sbx. 0, or -1 if it does not fit. */
int sbx_data_dir(char *out, size_t size);

enum sbx_data_area {
	SBX_DATA_CACHE,             /* probe records, accelerator listings */
	SBX_DATA_WORKSPACE_UIDS,    /* the registry of per-workspace uids */
	SBX_DATA_EXECUTIONS,        /* sbx-run's state when run by hand */
	SBX_DATA_EGRESS,            /* per-revision egress gateway files */
	SBX_DATA_PROJECTS,          /* project workspaces */
	SBX_DATA_REMOTE_WORKSPACES, /* remote workspaces by key */
	SBX_DATA_REMOTE_SNAPSHOTS,  /* remote workspace snapshots */
	SBX_DATA_RUNNER_EXECUTIONS, /* sbx-httpd's records, and sbx-run's state under it */
	SBX_DATA_VERSIONING,        /* the snapshot store of runs through sbx-httpd */
	SBX_DATA_RUNNER_UPLOADS,    /* streamed uploads being staged */
	SBX_DATA_SKILL_PACKAGES,    /* held skill packages */
	SBX_DATA_SCIENTIFIC_ENVS,   /* managed environments */
	SBX_DATA_NPU_JOBS,          /* NPU broker jobs */
	SBX_DATA_SECRETS,           /* the secret store */
	SBX_DATA_AREAS
};

struct sbx_data_area_entry {
	const char *name;  /* the directory below <data> */
	const char *owner; /* the stage that writes it */
	const char *holds; /* one line for the man page */
};

extern const struct sbx_data_area_entry sbx_data_layout[SBX_DATA_AREAS];

/* <data>/<area>, then /<leaf> when leaf is not NULL. 0, or -1 if it does
 * not fit in size. */
int sbx_data_path(const char *data, enum sbx_data_area area, const char *leaf, char *out, size_t size);

#endif
