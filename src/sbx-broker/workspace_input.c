/* workspace_input.c — a workload input that names a file in the job's
 * workspace: a relative path that resolves inside the workspace. */
#include "broker.h"
#include "../lib/exitcodes.h"
#include "../lib/path.h"
#include "../lib/text.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *fail(struct sbx_error *e, const char *fmt, const char *a, const char *b)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "template", fmt, a, b);
	return NULL;
}

char *broker_workspace_input(const char *workload_id, const char *workspace, const json_t *inputs,
			     const char *field, struct sbx_error *e)
{
	const char *value = json_string_value(json_object_get(inputs, field));
	char *v = value ? sbx_trim_dup(value, strlen(value)) : NULL;
	if (!v || !*v) {
		free(v);
		return fail(e, "%s requires inputs.%s", workload_id, field);
	}
	/* resolve(x) !== x: anything absolute is not workspace-relative. */
	if (v[0] == '/') {
		free(v);
		return fail(e, "%s must be a workspace-relative path%s", field, "");
	}
	char joined[PATH_MAX * 2];
	snprintf(joined, sizeof(joined), "%s/%s", workspace, v);
	free(v);
	char *real = realpath(joined, NULL);
	if (!real || !sbx_path_is_within(workspace, real)) {
		free(real);
		return fail(e, "%s must resolve inside the NPU job workspace%s", field, "");
	}
	return real;
}
