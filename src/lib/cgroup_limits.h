/* cgroup_limits.h — a run's memory, pids and CPU limits through cgroup v2,
 * only where the host delegates a writable subtree with those controllers
 * (or $SBX_CGROUP_ROOT names one). Otherwise a request with limits is
 * refused; a request without them runs with rlimits and the /tmp cap. */
#ifndef SBX_CGROUP_LIMITS_H
#define SBX_CGROUP_LIMITS_H

#include "error.h"
#include "run_request.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>

struct sbx_cgroup {
	char path[PATH_MAX];
	int procs_fd;   /* cgroup.procs, for the child to join; -1 when none */
	bool active;
};

/* Creates <root>/sbx-<id> with the limits. Exit 4 when not delegated. */
int sbx_cgroup_create(const char *id, const struct sbx_run_limits *l, struct sbx_cgroup *cg,
		      struct sbx_error *e);
/* cgroup.kill: every process in it, at once (Linux 5.14+). */
void sbx_cgroup_kill(const struct sbx_cgroup *cg);
void sbx_cgroup_remove(struct sbx_cgroup *cg);
/* What applied, for the result: {mode, memoryBytes, pids, cpuPercent}. */
json_t *sbx_cgroup_report(const struct sbx_cgroup *cg, const struct sbx_run_limits *l);

#endif
