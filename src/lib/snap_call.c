/* snap_call.c — one sbx-snap history command on fds handed over: the
 * workspace as fd 3, a fork's targets after it. */
#include "snap_call.h"
#include "exitcodes.h"
#include "stage_call.h"
#include "strvec.h"

#include <stdio.h>
#include <string.h>

#define SNAP_CALL_TIMEOUT_MS (15 * 60 * 1000)
#define SNAP_CALL_ANSWER_CAP (256u << 20)

json_t *sbx_snap_call(const char *program, const char *store, const char *lease_dir, const char *const *args,
		      const int *fds, size_t n_fds, struct sbx_error *e)
{
	char fd_arg[SBX_SNAP_CALL_FDS_MAX][8];
	struct sbx_strvec argv;
	if (!args[0] || n_fds < 1 || n_fds > SBX_SNAP_CALL_FDS_MAX) {
		sbx_error_set(e, SBX_EXIT_USAGE, "too-many", "sbx-snap takes a workspace and at most 64 forks");
		return NULL;
	}
	sbx_strvec_init(&argv);
	sbx_strvec_push(&argv, program);
	for (size_t i = 0; args[i]; i++)
		sbx_strvec_push(&argv, args[i]);
	const char *common[] = { "--store", store, "--workspace-fd", "3", NULL };
	for (size_t i = 0; common[i]; i++)
		sbx_strvec_push(&argv, common[i]);
	if (strcmp(args[0], "versions") != 0) {
		sbx_strvec_push(&argv, "--state-dir");
		sbx_strvec_push(&argv, lease_dir);
	}
	for (size_t i = 1; i < n_fds; i++) {
		snprintf(fd_arg[i], sizeof(fd_arg[i]), "%zu", i + 3);
		sbx_strvec_push(&argv, "--into-fd");
		sbx_strvec_push(&argv, fd_arg[i]);
	}
	json_t *out = NULL;
	if (argv.failed) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "oom", "out of memory");
	} else {
		struct sbx_spawn s = { .argv = (const char *const *)argv.items, .stdin_fd = -1, .die_with_parent = true,
				       .new_process_group = true, .extra_fds = fds, .n_extra = n_fds };
		out = sbx_stage_call(&s, SNAP_CALL_TIMEOUT_MS, SNAP_CALL_ANSWER_CAP, e);
	}
	sbx_strvec_free(&argv);
	return out;
}
