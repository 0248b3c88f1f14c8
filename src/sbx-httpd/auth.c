/* auth.c — runner-api 3 on a request: the bearer token and the execution
 * signature (auth_checks.c has the checks). */
#include "auth.h"
#include "config.h"
#include "reply.h"
#include "../lib/clock.h"
#include "auth_checks.h"
#include "metrics.h"

#include <stdbool.h>

bool auth_bearer(const struct config *c, struct req *r)
{
	return sbx_bearer_ok(header(r, "authorization"), c->token, c->token_len);
}

bool auth_signature(const struct config *c, struct req *r)
{
	bool ok = sbx_signature_ok(header(r, "x-science-execution-timestamp"), header(r, "x-science-execution-signature"),
				   r->body, r->len, c->token, c->token_len, sbx_wall_ms(), c->signature_max_age_ms);
	if (!ok)
		metrics_refused(METRICS_REFUSED_BAD_SIGNATURE);
	return ok;
}
