/* speculative.h — sbx's extension: a speculative execution's pending
 * change committed or discarded over HTTP (POST
 * /shell-executions/<id>/commit and /discard), as `sbx-run commit` and
 * `sbx-run discard` children, and expired ones collected. */
#ifndef SBX_HTTPD_SPECULATIVE_H
#define SBX_HTTPD_SPECULATIVE_H

#include "reply.h"

#include <jansson.h>
#include <stdbool.h>

/* id: a managed execution's id (its owner in the query, as for its other
 * endpoints) or the id a result's "speculative" names. 200 with the
 * answer; 409 when the workspace changed since the run began (unless
 * {"force": true}) or the change is no longer pending; 404 when there is
 * no such change. */
enum MHD_Result handle_speculative(struct req *r, const char *id, bool commit);

/* Run directories keep their pending change until it is committed,
 * discarded or expired: true when internal_id's holds one. */
bool speculative_pending(int runs_dir, const char *internal_id);

/* Expired pending changes collected (`sbx-run sweep --pending-only`),
 * while some may wait: once a speculative execution has ended
 * (speculative_ended), or a sweep found some (speculative_swept). */
void speculative_sweep(void);
void speculative_ended(void);
/* Any sweep's answer: changes still waiting are swept again later. */
void speculative_swept(const json_t *answer);

#endif
