/* sequence.c — one execution sequence for both front ends: the request
 * accepted in one order (workspace, id, the rest), and run in one order
 * (lease, startedAt, recheck, sbx-run, wait, lease released). */
#include "sequence.h"
#include "environments.h"
#include "metrics_run.h"
#include "request.h"
#include "../lib/clock.h"

#include <limits.h>
#include <unistd.h>

unsigned sequence_accept(json_t *doc, bool shell, sequence_id_rule rule, struct api_exec *x, json_t **run,
			 struct sbx_error *e)
{
	char workspace[PATH_MAX];
	int ws_fd = request_workspace(doc, workspace, sizeof(workspace), e);
	if (ws_fd < 0)
		return 400;
	unsigned refused = rule(json_string_value(json_object_get(doc, "executionId")), e);
	if (refused) {
		close(ws_fd);
		return refused;
	}
	return request_build(doc, shell, workspace, ws_fd, x, run, e) == 0 ? 0 : 400;
}

int sequence_run(struct api_exec *x, json_t *run, struct child *c, const struct sequence_hooks *h, struct sbx_error *e)
{
	int lease = x->env_id[0] ? environments_lease(x->env_id) : -1;
	sbx_iso_time(sbx_wall_ms(), x->started_at); /* the record's startedAt and the result's */
	metrics_execution_turn(x);
	if (h->turn)
		h->turn(h->arg);
	int rc = request_skills_recheck(x, e);
	if (rc == 0)
		rc = runner_start(run, x->fds, x->n_fds, c, e);
	if (rc == 0) {
		if (h->started)
			h->started(h->arg, c);
		runner_wait(c, h->tick, h->arg);
	}
	if (lease >= 0)
		close(lease);
	metrics_execution_ran(x, rc == 0 ? NULL : e);
	return rc;
}
