/* plan.h — the bwrap command line and the workload's environment for
 * one launch, built in one function that reads top to bottom. */
#ifndef SBX_LAUNCH_PLAN_H
#define SBX_LAUNCH_PLAN_H

#include "../lib/error.h"
#include "identity_files.h"
#include "host.h"
#include "../lib/launch_spec.h"
#include "../lib/probe.h"
#include "../lib/strvec.h"

#define SBX_SECCOMP_FD 3 /* where bwrap finds the filter (--seccomp 3) */
/* A launch that reports denials: sbx-seccomp-notify finds its half of the
 * filter on fd 6 and the supervisor's socket on fd 7 (closed before the
 * workload starts). */
#define SBX_NOTIFY_FILTER_FD 6
#define SBX_NOTIFY_SOCKET_FD 7
/* Host objects reach bwrap as fds 8, 9, ... (--bind-fd / --ro-bind-fd, or
 * --ro-bind-data for generated files): bwrap mounts exactly what the fd
 * holds (or copies what it reads) and closes it before the workload. */
#define SBX_BIND_FD_FIRST 8
#define SBX_BIND_FD_MAX 64

struct sbx_launch_plan {
	struct sbx_strvec argv;       /* bwrap's absolute path first */
	struct sbx_strvec env_keys;   /* the workload's environment, in order */
	struct sbx_strvec env_values;
	int bind_src[SBX_BIND_FD_MAX]; /* this process's fd for slot SBX_BIND_FD_FIRST + i */
	const char *bind_name[SBX_BIND_FD_MAX]; /* its host name, for the record */
	bool bind_data[SBX_BIND_FD_MAX];        /* content bwrap reads, not an object it mounts */
	size_t n_bind;
	int ws_slot, ext_slot;         /* the workspace's and the skill extensions' slots, -1: none */
	int overlay_dir;               /* workspaceOverlay's directory (overlay.h), -1: none */
	long long file_size_limit;     /* RLIMIT_FSIZE for the sandbox, -1: none */
	long long max_processes;       /* RLIMIT_NPROC, 0: none (set only for a dedicated uid) */
	long long max_open_files;      /* RLIMIT_NOFILE, 0: none */
	long long max_address_space;   /* RLIMIT_AS, 0: none */
};

int sbx_launch_plan_build(const struct sbx_launch_spec *spec, const struct sbx_sandbox_profile *probe,
			  const struct sbx_launch_host *host, const struct sbx_identity *id,
			  struct sbx_launch_plan *plan, struct sbx_error *e);
void sbx_launch_plan_free(struct sbx_launch_plan *plan);

#endif
