/* environments.h — sbx-env behind the environment endpoints, and what
 * executions ask of it: the capability, a revision's prefix, a lease. */
#ifndef SBX_HTTPD_ENVIRONMENTS_H
#define SBX_HTTPD_ENVIRONMENTS_H

#include "reply.h"
#include "../lib/error.h"

#include <jansson.h>
#include <stddef.h>

enum MHD_Result handle_environments(struct req *r, const char *id, const char *action);
json_t *environments_capability(void);
void environments_start_setup(void);
/* selector "--revision" or "--environment" with its id (NULL: the starter). */
int environments_resolve(const char *selector, const char *id, const char *language, char *prefix, size_t size,
			 char *revision, size_t rsize, char *env_id, size_t esize, struct sbx_error *e);
/* A shared lock on the environment for the run's duration (-1: none). */
int environments_lease(const char *env_id);

#endif
