/* sandbox.h — one sandbox under supervision: started through sbx-launch
 * (which execs bwrap in place, so our child is bwrap), its pid namespace
 * learned from bwrap's info fd, and stopped for good: SIGTERM to every
 * process below its pid 1, a grace, then SIGKILL of bwrap and the
 * sandbox's pid 1, which takes the whole namespace down with it (a
 * setsid() and double-fork inside cannot escape that). */
#ifndef SBX_RUN_SANDBOX_H
#define SBX_RUN_SANDBOX_H

#include "../lib/error.h"
#include "spawn_hold.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sbx_sandbox {
	pid_t pid;          /* bwrap, our child */
	int pidfd;
	pid_t init_pid;     /* the sandbox's pid 1, in our pid namespace (0 until known) */
	int init_pidfd;
	uint64_t pidns;     /* its pid namespace inode */
	int in, out, err, info; /* our ends: the workload's stdin, stdout, stderr; bwrap's info */
	int plan;           /* sbx-launch's --plan-fd record, read once by sbx_sandbox_plan */
	char info_buf[4096];
	size_t info_len;
};

/* Forks the sandbox's first process ahead of time, in its own session,
 * dying with us: it joins each of the n cgroup.procs fds > 0 at once (a
 * cgroup v1 join waits out an RCU grace period: it runs while the caller
 * prepares the launch) and waits for sbx_sandbox_start. */
int sbx_sandbox_hold(const int *cgroup_procs_fds, size_t n_cgroup_procs, struct sbx_spawn_holder *h,
		     struct sbx_error *e);
/* Starts `launch` (sbx-launch) on spec in the held process. channel_fd
 * >= 0: the sandbox's end of the worker channel; denials_fd >= 0: the
 * socket the seccomp listener comes back on (sbx-launch --denials-fd). */
int sbx_sandbox_start(const char *launch, const json_t *spec, struct sbx_spawn_holder *holder, int channel_fd,
		      int denials_fd, struct sbx_sandbox *sb, struct sbx_error *e);
/* sbx-launch's plan ({argv, env, cwd, ...}, its --dry-run record), written
 * just before bwrap starts; NULL when the launch refused (it said why on
 * stderr). */
json_t *sbx_sandbox_plan(struct sbx_sandbox *sb);
/* True when bwrap said the workload ended ({"exit-code": N} on its status
 * fd): a sandbox that died in its setup never says so. */
bool sbx_sandbox_exit_reported(struct sbx_sandbox *sb);
/* Reads bwrap's info fd when it is readable; true once pid 1 is known. */
bool sbx_sandbox_read_info(struct sbx_sandbox *sb);
/* sig to every process below the sandbox's pid 1 (its whole namespace but
 * pid 1 itself, found by descent, which needs no ptrace right). */
int sbx_sandbox_signal_all(const struct sbx_sandbox *sb, int sig);
/* SIGKILL to bwrap and the sandbox's pid 1: the namespace goes with them. */
void sbx_sandbox_kill(const struct sbx_sandbox *sb);
/* Waits until the whole process tree is gone; returns bwrap's wait status. */
int sbx_sandbox_reap(struct sbx_sandbox *sb);
void sbx_sandbox_close(struct sbx_sandbox *sb);

#endif
