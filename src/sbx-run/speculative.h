/* speculative.h — a speculative run's side of sbx-run: its overlay's
 * directories before the launch, its quota while it runs, and its pending
 * change (change set, record, expiry) once it has ended. */
#ifndef SBX_RUN_SPECULATIVE_H
#define SBX_RUN_SPECULATIVE_H

#include "../lib/error.h"
#include "../lib/quota_watch.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SPECULATIVE_RESULT_CHANGES 10000 /* changes a result lists; changes.json holds all */
#define SPECULATIVE_RESULT_PATH_BYTES (4u << 20) /* and their paths together (each list), so a result
                                                   * stays readable however its paths escape */

struct run;

struct run_speculative {
	int dir;              /* <exec>/speculative (-1: not speculative) */
	int layer;            /* its layer/: upper/, work/, merged/, the workload's */
	int upper;            /* layer/upper */
	char xattrs[8];       /* the overlay's marks: "trusted" (as root) or "user" */
	uint64_t lower_bytes, lower_names; /* the workspace's usage when the run began */
	json_t *report;       /* the result's "speculative" */
};

/* Makes speculative/layer/ with upper/ (the workspace root's mode), work/
 * and merged/, all uid:gid's, and names layer/ in the spec
 * (workspaceOverlay). */
int run_speculative_prepare(struct run *r, uid_t uid, gid_t gid, bool as_root, struct sbx_error *e);
/* The workspace's usage when the run began (under the lease). */
void run_speculative_measure(struct run *r);
/* The quota while it runs: what upper/ holds, on top of the workspace's
 * usage taken before (a copied-up file counts twice until committed). */
enum sbx_quota_state run_speculative_quota(struct run *r, uint64_t *bytes);
/* After the run: the change set and pending.json when the run ended
 * without a failure class, else the change goes; r's report is set. */
void run_speculative_finish(struct run *r);
void run_speculative_close(struct run_speculative *s);

#endif
