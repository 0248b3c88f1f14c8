/* spawn_hold.h — sbx-run's two-step start of the sandbox: the child is
 * forked early and joins its cgroups while the supervisor prepares. */
#ifndef SBX_RUN_SPAWN_HOLD_H
#define SBX_RUN_SPAWN_HOLD_H

#include "../lib/spawn.h"

/* A start in two steps . hold forks the child at once: it
 * takes its session and parent-death signal and joins the cgroups of s
 * (a cgroup v1 join waits out an RCU grace period, so it starts early
 * and runs while the caller prepares); release then sends it argv, the
 * environment, the working directory and the fds of a second spec, and it
 * execs. discard kills and reaps a held child never released. */
struct sbx_spawn_holder {
	pid_t pid;
	int sock;               /* our end; -1 once released or discarded */
};
int sbx_spawn_hold(const struct sbx_spawn *s, struct sbx_spawn_holder *h, struct sbx_error *e);
pid_t sbx_spawn_release(struct sbx_spawn_holder *h, const struct sbx_spawn *s, int *exec_errno, struct sbx_error *e);
void sbx_spawn_discard(struct sbx_spawn_holder *h);
#endif
