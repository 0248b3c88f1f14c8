/* auth.h — the bearer token and the request signature (runner-api 3). */
#ifndef SBX_HTTPD_AUTH_H
#define SBX_HTTPD_AUTH_H

#include "config.h"
#include "reply.h"

#include <stdbool.h>

bool auth_bearer(const struct config *c, struct req *r);
bool auth_signature(const struct config *c, struct req *r);

#endif
