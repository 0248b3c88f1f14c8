/* ws_call.h — one call of sbx-ws, the remote-workspace stage: its
 * options, the key and paths after "--", and an fd handed to it. */
#ifndef SBX_HTTPD_WS_CALL_H
#define SBX_HTTPD_WS_CALL_H

#include "../lib/error.h"

#include <jansson.h>
#include <stddef.h>

struct ws_call {
	const char *opts[8];         /* options before "--" */
	const char *key;
	const char *const *paths;    /* after the key */
	size_t n_paths;
	int fd;                      /* becomes the stage's fd 3 (-1: none) */
};

/* Runs sbx-ws with the data dir and the workspace byte cap; its JSON
 * answer, or NULL with e (the stage's diagnostic). */
json_t *ws_call_run(const struct ws_call *c, struct sbx_error *e);

#endif
