/* stage_call.c — spawning a stage and reading its answer: JSON on stdout
 * when it exits 0, its last diagnostic line on stderr when it does not. */
#include "stage_call.h"
#include "exitcodes.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* e from a finished stage's capture: its last stderr line read as a
 * diagnostic (code, message, remedy), else the line itself, else how the
 * stage ended. The exit class is the stage's exit status when it has one. */
static void stage_error(const struct sbx_capture *c, const char *stage, struct sbx_error *e)
{
	char line[1200];
	int status = WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1;
	int exit_code = status > 0 && status < 128 ? status : SBX_EXIT_INTERNAL;

	if (c->timed_out) {
		sbx_error_set(e, SBX_EXIT_TIMEOUT, "timeout", "%s did not answer in time", stage);
		return;
	}
	sbx_last_line(c->err ? c->err : "", line, sizeof(line));
	json_t *d = line[0] == '{' ? json_loads(line, 0, NULL) : NULL;
	const char *message = json_string_value(json_object_get(d, "message"));
	if (message) {
		sbx_error_set(e, exit_code, sbx_json_string_or(d, "code", "error"), "%s", message);
		const char *remedy = json_string_value(json_object_get(d, "remedy"));
		if (remedy)
			sbx_error_remedy(e, "%s", remedy);
	} else if (line[0]) {
		sbx_error_set(e, exit_code, "error", "%s", line);
	} else if (status >= 0) {
		sbx_error_set(e, exit_code, "error", "%s exited with status %d", stage, status);
	} else {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "error", "%s was killed by signal %d", stage,
			      WIFSIGNALED(c->status) ? WTERMSIG(c->status) : 0);
	}
	json_decref(d);
}

int sbx_stage_call_bytes(const struct sbx_spawn *s, int timeout_ms, size_t cap, char **out, size_t *len,
			 struct sbx_error *e)
{
	struct sbx_capture c;
	const char *stage = strrchr(s->argv[0], '/') ? strrchr(s->argv[0], '/') + 1 : s->argv[0];

	if (sbx_spawn_capture(s, timeout_ms, cap, &c, e) != 0)
		return -1;
	int ok = !c.timed_out && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
	if (ok && c.out_truncated) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "answer-too-large", "%s answered more than %zu bytes", stage, cap);
		ok = 0;
	} else if (ok) {
		*out = c.out;
		*len = c.out_len;
		c.out = NULL;
	} else {
		stage_error(&c, stage, e);
	}
	sbx_capture_free(&c);
	return ok ? 0 : -1;
}

json_t *sbx_stage_call(const struct sbx_spawn *s, int timeout_ms, size_t cap, struct sbx_error *e)
{
	char *out;
	size_t len;

	if (sbx_stage_call_bytes(s, timeout_ms, cap, &out, &len, e) != 0)
		return NULL;
	json_error_t je;
	json_t *v = json_loadb(out, len, 0, &je);
	free(out);
	if (!v)
		sbx_error_set(e, SBX_EXIT_INTERNAL, "bad-answer", "%s answered no JSON: %s",
			      strrchr(s->argv[0], '/') ? strrchr(s->argv[0], '/') + 1 : s->argv[0], je.text);
	return v;
}
