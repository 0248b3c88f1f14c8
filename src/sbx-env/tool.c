/* tool.c — micromamba, pip and R as children: an explicit argv, no shell,
 * a timeout, bounded output; a failure names the exact argv. Every tool
 * runs inside an install sandbox (install_box.c), never on the host. */
#include "env.h"
#include "../lib/exitcodes.h"
#include "../lib/spawn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define TOOL_OUTPUT_CAP (8u << 20)

static void argv_text(const char *const *argv, char *out, size_t size)
{
	size_t n = 0;
	out[0] = '\0';
	for (int i = 0; argv[i] && n + 1 < size; i++)
		n += (size_t)snprintf(out + n, size - n, "%s%s", i ? " " : "", argv[i]);
}

int env_run_tool(const struct envctx *c, const char *const *argv, char **out, struct sbx_error *e)
{
	struct env_box box;
	struct sbx_capture cap;
	char cmd[2048], tail[600];
	if (out)
		*out = NULL;
	argv_text(argv, cmd, sizeof(cmd));
	if (env_box_open(c, argv, &box, e) != 0)
		return -1;
	/* A killed sbx-env takes its tool along (sbx-launch's bwrap dies with
	 * its parent): nothing changes a prefix after the environment has been
	 * marked failed. */
	struct sbx_spawn s = { .argv = (const char *const *)box.launch_argv, .stdin_fd = box.spec_fd,
			       .extra_fds = box.fds, .n_extra = box.n_fds, .new_process_group = true,
			       .die_with_parent = true };
	int started = sbx_spawn_capture(&s, c->tool_timeout_s * 1000, TOOL_OUTPUT_CAP, &cap, e);
	env_box_close(&box);
	if (started != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "tool-failed", "%.1000s: cannot run", cmd);
		return -1;
	}
	int ok = !cap.timed_out && WIFEXITED(cap.status) && WEXITSTATUS(cap.status) == 0;
	if (!ok) {
		sbx_last_line(cap.err && *cap.err ? cap.err : cap.out, tail, sizeof(tail));
		if (cap.timed_out)
			sbx_error_set(e, SBX_EXIT_TIMEOUT, "tool-timeout", "%.1000s: no answer within %d s", cmd, c->tool_timeout_s);
		else if (WIFEXITED(cap.status) && WEXITSTATUS(cap.status) == SBX_EXIT_NO_SANDBOX)
			sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "install-sandbox", "%.1000s: the install sandbox did not start: %s",
				      cmd, tail);
		else
			sbx_error_set(e, SBX_EXIT_WORKLOAD, "tool-failed", "%.1000s: exit %d: %s", cmd,
				      WIFEXITED(cap.status) ? WEXITSTATUS(cap.status) : 128 + WTERMSIG(cap.status), tail);
	} else if (out) {
		*out = cap.out;
		cap.out = NULL;
	}
	sbx_capture_free(&cap);
	return ok ? 0 : -1;
}

/* micromamba --no-rc ARGS (its root prefix and package cache are the
 * install sandbox's: install_box.c). */
int env_micromamba(const struct envctx *c, const char *const *args, char **out, struct sbx_error *e)
{
	const char *argv[64] = { c->provisioner, "--no-rc" };
	int n = 2;
	for (int i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return env_run_tool(c, argv, out, e);
}
