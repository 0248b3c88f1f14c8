/* request.h — execution requests of the API (see request.c). */
#ifndef SBX_HTTPD_REQUEST_H
#define SBX_HTTPD_REQUEST_H

#include "runner.h"

/* The kernelMode check and the workspace opened below the allowed roots:
 * what runs before the executionId is recorded. Returns the workspace's
 * directory fd (its name, for display, in workspace), or -1 with e. */
int request_workspace(json_t *doc, char *workspace, size_t size, struct sbx_error *e);
/* Everything else, and the sbx-run request (*run, to free). x takes ws_fd
 * whatever the outcome; the request names it and every other directory
 * sbx-run gets as "fd:N" (x->fds, handed on by runner_start). */
int request_build(json_t *doc, bool shell, const char *workspace, int ws_fd, struct api_exec *x, json_t **run,
		  struct sbx_error *e);
/* The skill package x mounts verified again (sbx-skills verify on its fd:
 * its stamp, normally) right before sbx-run starts: a package changed
 * while the execution waited in line is caught. 0, or -1 with e. */
int request_skills_recheck(const struct api_exec *x, struct sbx_error *e);
/* Closes the directory fds x holds. */
void api_exec_close(struct api_exec *x);

#endif
