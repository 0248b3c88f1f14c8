/* run_as.h — the workload never runs as host root. A launch started by
 * root switches to a dedicated unprivileged uid/gid, with no supplementary
 * groups, before bwrap; a launch started by anyone else keeps its uid. */
#ifndef SBX_RUN_AS_H
#define SBX_RUN_AS_H

#include "error.h"

#include <stdbool.h>
#include <sys/types.h>

#define SBX_RUN_AS_DEFAULT_ID 10001 /* when no "sbx" user exists */

/* The uid a root prober's child runs as (probe_as.c), in the sandbox
 * group: no workload, broker job or gateway runs as it (neither
 * SBX_UID_RANGE nor --run-as may name it), so no process can stop or
 * signal the probe's sandboxes. */
#define SBX_PROBE_UID 2147483646u

struct sbx_run_as {
	uid_t uid;
	gid_t gid;
	bool switch_user; /* started as root: drop to uid/gid before bwrap */
};

/* Resolves who the workload runs as. `want` ("NAME", "UID" or "UID:GID";
 * NULL: $SBX_RUN_AS, else the "sbx" user, else 10001:10001; a numeric uid
 * without a gid takes its /etc/passwd group, else gid = uid) only matters
 * when started as root. Refuses uid or gid 0 (exit 3). */
int sbx_run_as_resolve(const char *want, struct sbx_run_as *r, struct sbx_error *e);

/* Drops to r's uid/gid for good (setgroups, setresgid, setresuid) and
 * checks that root cannot be regained. No-op unless r->switch_user. */
int sbx_run_as_switch(const struct sbx_run_as *r, struct sbx_error *e);

#endif
