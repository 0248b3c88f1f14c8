/* standby.h — warm sbx-run processes (sbx-run --standby): started ahead
 * of requests by one long-lived thread, each already narrowed, in its
 * cgroups and with its sandbox's first process forked, so a request skips
 * the start-up and the cgroup v1 join (an RCU grace period, ~11 ms). */
#ifndef SBX_HTTPD_STANDBY_H
#define SBX_HTTPD_STANDBY_H

#include <stdbool.h>
#include <sys/types.h>

struct standby {
	pid_t pid;
	int sock;          /* its stdin: the request and its fds go here */
	int events_fd, err_fd;
};

/* Starts the thread that keeps SBX_WARM_RUNNERS standbys ready. */
void standby_start(void);
/* A ready standby (false: none; start one cold). The thread refills. */
bool standby_take(struct standby *out);
/* Standbys ready now. */
int standby_ready(void);
/* A run started (warm or cold) and let go (its answer on its way): the
 * pool is topped up only between runs, or when it is empty. */
void standby_run_begins(void);
void standby_run_ends(void);
/* Kills and reaps one taken but unusable. */
void standby_discard(struct standby *w);
/* Releases the idle ones (EOF: they clean up and exit) and reaps them. */
void standby_stop(void);

#endif
