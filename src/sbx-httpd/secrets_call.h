/* secrets_call.h — the secret store (issue #31) behind /secrets as
 * sbx-secrets children, and the check an execution's secret references
 * get against its network policy. */
#ifndef SBX_HTTPD_SECRETS_CALL_H
#define SBX_HTTPD_SECRETS_CALL_H

#include "reply.h"
#include "../lib/error.h"

#include <jansson.h>

/* GET /secrets ("list"), PUT /secrets/:name ("put"), POST
 * /secrets/:name/rotate ("rotate"), DELETE /secrets/:name ("rm"): signed
 * like an execution (over the body, empty for GET and DELETE). */
enum MHD_Result handle_secrets(struct req *r, const char *name, const char *op);
/* sbx-secrets check --policy - REFS...: network_policy (a sbx-egress
 * policy object, or NULL for none) on its stdin, refs an array of secret
 * names. 0 with *checked its answer {secrets: [{name, env, hosts}]}; -1
 * with e (a message to answer 400 with: an unknown secret, a host the
 * policy does not allow, two secrets with one env name, no policy). */
int secrets_check(const json_t *network_policy_or_null, const json_t *refs_array, json_t **checked,
		  struct sbx_error *e);

#endif
