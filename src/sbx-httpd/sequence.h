/* sequence.h — the steps every execution takes, whichever front end
 * answers it: execute.c (the answer now) or managed.c (a record in
 * SQLite). Accepting checks and builds the request; running, once its
 * turn comes, rechecks the skill package, leases the environment, starts
 * sbx-run and waits for it. */
#ifndef SBX_HTTPD_SEQUENCE_H
#define SBX_HTTPD_SEQUENCE_H

#include "runner.h"
#include "../lib/error.h"

#include <jansson.h>
#include <stdbool.h>

/* What a front end asks of the executionId, after the workspace and
 * before the rest: 0, or the HTTP status to refuse with (e set). */
typedef unsigned (*sequence_id_rule)(const char *id, struct sbx_error *e);

/* kernelMode and the workspace, the id rule, then everything else into x
 * and *run (to free): 0, or the status (400, or the rule's) with e. */
unsigned sequence_accept(json_t *doc, bool shell, sequence_id_rule rule, struct api_exec *x, json_t **run,
			 struct sbx_error *e);

struct sequence_hooks {
	bool (*tick)(void *arg);       /* polled while sbx-run runs; true: stop it */
	void (*turn)(void *arg);       /* out of the queue: x->started_at is set */
	void (*started)(void *arg, struct child *c); /* sbx-run runs */
	void *arg;
};

/* In its turn: 0 with c run to its end (the caller frees it), or -1 with
 * e when nothing ran (the package failed its recheck, sbx-run did not
 * start). The environment's lease is held from before the recheck until
 * sbx-run has ended. */
int sequence_run(struct api_exec *x, json_t *run, struct child *c, const struct sequence_hooks *h, struct sbx_error *e);

#endif
