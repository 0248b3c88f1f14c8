/* egress_denials.h — the egress gateway's refusals of this run, read from
 * its audit log while the run goes on (the lines of the sandbox's
 * sbx-egress-bridge, by its pid) and noted as "egress" denials. */
#ifndef SBX_RUN_EGRESS_DENIALS_H
#define SBX_RUN_EGRESS_DENIALS_H

#include "audit_follow.h"

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

struct run_egress_watch {
	bool on;
	struct audit_follow log; /* the gateway's audit log */
	int timer;               /* timerfd of the reads */
	char sock[PATH_MAX + 64]; /* the gateway's socket: the final count request */
	pid_t bridge;            /* the bridge's pid (in ours), 0 until found */
	unsigned searches;       /* quick ticks spent looking for it */
};

struct run;

/* Before the sandbox starts: the log's end is where this run's lines begin
 * (nothing for a run without a gateway of sbx-run's). */
void run_egress_watch_start(struct run *r);
/* The fd supervise.c polls while the sandbox runs (-1: none); its tick
 * reads what came. */
int run_egress_watch_fd(const struct run *r);
void run_egress_watch_tick(struct run *r);
/* After the sandbox is gone: the gateway writes the counts it held for
 * the bridge, and the rest of the log is read. */
void run_egress_watch_finish(struct run *r);

#endif
