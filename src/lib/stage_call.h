/* stage_call.h — one stage asking another: spawn it, wait (bounded), and
 * take its JSON on stdout, or its last JSON diagnostic on stderr as an
 * sbx_error (code, message, remedy and the stage's exit class). */
#ifndef SBX_STAGE_CALL_H
#define SBX_STAGE_CALL_H

#include "error.h"
#include "spawn.h"

#include <jansson.h>

/* Runs s (deadline timeout_ms, 0: none; stdout and stderr capped at cap).
 * An exit 0 whose stdout is JSON returns that value. Otherwise NULL with
 * e from the stage's diagnostic, or "<stage> failed"-style text naming
 * how it ended when it left none. */
json_t *sbx_stage_call(const struct sbx_spawn *s, int timeout_ms, size_t cap, struct sbx_error *e);
/* The same, keeping stdout as bytes: 0 with *out (NUL-terminated, the
 * caller frees) and *len on exit 0; -1 with e as above. */
int sbx_stage_call_bytes(const struct sbx_spawn *s, int timeout_ms, size_t cap, char **out, size_t *len,
			 struct sbx_error *e);

#endif
