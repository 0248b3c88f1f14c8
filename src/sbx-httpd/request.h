/* request.h — execution requests of the API (see request.c). */
#ifndef SBX_HTTPD_REQUEST_H
#define SBX_HTTPD_REQUEST_H

#include "runner.h"

/* The kernelMode check and the workspace's realpath inside the allowed
 * roots: what runs before the executionId is recorded. */
int request_workspace(json_t *doc, char *workspace, size_t size, char *msg, size_t msize);
/* Everything else, and the sbx-run request (*run, to free). */
int request_build(json_t *doc, bool shell, const char *workspace, struct api_exec *x, json_t **run, char *msg,
		  size_t msize);

#endif
