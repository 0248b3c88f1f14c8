/* body.h — a request's body: its limit by endpoint, the JSON object it
 * must be, and a signed endpoint's signature checked first. */
#ifndef SBX_HTTPD_BODY_H
#define SBX_HTTPD_BODY_H

#include "reply.h"

#include <stddef.h>

#define BODY_LIMIT 2000000
#define SKILL_BODY_LIMIT (64u << 20)

size_t request_body_limit(struct req *r);
size_t body_limit(const char *method, const char *url);
/* The JSON body (an object), or NULL after a 400 was sent. */
json_t *body_object(struct req *r, enum MHD_Result *sent);
/* The same for a signed endpoint: a too-large body (400), then the
 * signature (401 with `refusal`), then the JSON. */
json_t *signed_body(struct req *r, const char *refusal, enum MHD_Result *sent);

/* A memfd holding len bytes of body, at offset 0 (a stage's stdin); -1
 * with errno. */
int body_memfd(const char *body, size_t len);

#endif
