/* cgroup_limits.h — a run's memory, pids and CPU limits: cgroup v2 where the
 * host delegates a writable subtree with those controllers ($SBX_CGROUP_ROOT
 * names one), else the cgroup v1 memory/pids/cpu hierarchies when writable
 * (root on a v1 host), else (defaults only) rlimits; explicit limits refuse. */
#ifndef SBX_CGROUP_LIMITS_H
#define SBX_CGROUP_LIMITS_H

#include "error.h"
#include "run_request.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>

enum sbx_cgroup_mode { SBX_CGROUP_NONE, SBX_CGROUP_V2, SBX_CGROUP_V1 };

/* v2: dir[0] only. v1: one directory per controller hierarchy. */
enum { SBX_CG_MEMORY, SBX_CG_PIDS, SBX_CG_CPU, SBX_CG_DIRS };

struct sbx_cgroup {
	enum sbx_cgroup_mode mode;
	char dir[SBX_CG_DIRS][PATH_MAX]; /* "" when not created */
	int procs_fd[SBX_CG_DIRS];       /* cgroup.procs for the child to join; -1 when none */
	bool oom_killed;                 /* read at removal: the memory limit killed a process */
	long long oom_kills;             /* read at removal: how many */
	long long pids_refused;          /* read at removal: forks the pids limit refused (pids.events max) */
};

/* Where limits l would live here, creating nothing but v1's "sbx" parents. */
enum sbx_cgroup_mode sbx_cgroup_probe(const struct sbx_run_limits *l);
/* "rlimit", "cgroup-v2", "cgroup-v1". */
const char *sbx_cgroup_mode_name(enum sbx_cgroup_mode mode);

/* Creates sbx-<pid>-<id> with l's limits in the first mode that holds every one
 * set. Unavailable: exit 4 when l->requested (the caller asked), else 0
 * with mode NONE (the defaults fall back to rlimits; see run_limits). */
int sbx_cgroup_create(const char *id, const struct sbx_run_limits *l, struct sbx_cgroup *cg,
		      struct sbx_error *e);
/* Takes cg (made for other limits, by the same process) for l: 1 when it
 * holds l exactly (its limits rewritten to l's), 0 when l needs another
 * mode or other hierarchies (remove it and create anew), -1 on an error. */
int sbx_cgroup_adopt(struct sbx_cgroup *cg, const struct sbx_run_limits *l, struct sbx_error *e);
/* Every process in it, at once: cgroup.kill (v2), a SIGKILL per member (v1). */
void sbx_cgroup_kill(const struct sbx_cgroup *cg);
void sbx_cgroup_remove(struct sbx_cgroup *cg);
/* What applied, for the result: {mode, memoryBytes, pids, cpuPercent, ...}. */
json_t *sbx_cgroup_report(const struct sbx_cgroup *cg, const struct sbx_run_limits *l);

#endif
