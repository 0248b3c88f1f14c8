/* ws_call.c — running sbx-ws for sbx-httpd: the data dir and the byte cap
 * first, the request's options, then "--" and the clean key and paths. */
#include "ws_call.h"
#include "server.h"
#include "metrics.h"
#include "../lib/stage_call.h"
#include "../lib/strvec.h"

#include <stdio.h>

#define ANSWER_CAP (256u << 20) /* a listing or a snapshot's JSON */
/* A backstop, never a pace: the largest job, a snapshot or a copy of a
 * workspace at its byte cap, takes minutes; nothing a workload leaves in
 * its tree may hold a request thread longer. */
#define WS_CALL_TIMEOUT_MS (15 * 60 * 1000)

json_t *ws_call_run(const struct ws_call *c, struct sbx_error *e)
{
	struct sbx_strvec argv;
	char max[32];
	sbx_strvec_init(&argv);
	sbx_strvec_push(&argv, g_server.prog.ws);
	sbx_strvec_push(&argv, "--data-dir");
	sbx_strvec_push(&argv, g_server.cfg.data_dir);
	snprintf(max, sizeof(max), "%lld", g_server.cfg.max_workspace_bytes);
	sbx_strvec_push(&argv, "--max-bytes");
	sbx_strvec_push(&argv, max);
	for (int i = 0; c->opts[i]; i++)
		sbx_strvec_push(&argv, c->opts[i]);
	sbx_strvec_push(&argv, "--");
	if (c->key)
		sbx_strvec_push(&argv, c->key);
	for (size_t i = 0; i < c->n_paths; i++)
		sbx_strvec_push(&argv, c->paths[i]);
	json_t *out = NULL;
	if (argv.failed) {
		sbx_error_set(e, 5, "internal", "out of memory");
	} else {
		struct sbx_spawn s = { .argv = (const char *const *)argv.items, .stdin_fd = -1, .die_with_parent = true,
				       .new_process_group = true, .extra_fds = &c->fd, .n_extra = c->fd >= 0 ? 1 : 0 };
		out = sbx_stage_call(&s, WS_CALL_TIMEOUT_MS, ANSWER_CAP, e);
	}
	sbx_strvec_free(&argv);
	metrics_stage_call(g_server.prog.ws, out != NULL, e);
	return out;
}
