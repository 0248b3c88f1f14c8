/* metrics_run.h — what one execution counts for GET /metrics, from its
 * acceptance to its end (metrics_run.c). */
#ifndef SBX_HTTPD_METRICS_RUN_H
#define SBX_HTTPD_METRICS_RUN_H

#include "metrics.h"
#include "runner.h"
#include "../lib/error.h"

/* In line (the front end took it): queued from now. */
void metrics_execution_accepted(struct api_exec *x);
/* Out of the line: running from now. */
void metrics_execution_turn(struct api_exec *x);
/* sbx-run has ended, or did not start (e says why; NULL: it ran). */
void metrics_execution_ran(struct api_exec *x, const struct sbx_error *e);
/* Its end, before the front end answers or records it: outcome and
 * failure class, queue wait and duration, the denials its result lists.
 * c: the run, or NULL when nothing ran (it gave up in line, or did not
 * start). */
void metrics_execution_end(enum metrics_mode mode, const struct api_exec *x, const struct child *c);

#endif
