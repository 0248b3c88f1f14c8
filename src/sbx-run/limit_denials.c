/* limit_denials.c — the run's limits as denials: what each refused, its
 * value, the request field (the knob) that sets it and what to do. The
 * terminal ones (time, memory, workspace) also end the run with their
 * failureClass; these records say which limit it was. */
#include "run.h"
#include "../lib/workspace_owner.h"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

static void limit(struct run *r, const char *what, long long count, long long value, const char *knob,
		  const char *remedy, json_t *more)
{
	char policy[96];
	snprintf(policy, sizeof(policy), "%s = %lld", knob, value);
	json_t *detail = json_pack("{s:I,s:s}", "limit", (json_int_t)value, "knob", knob);
	if (more) {
		json_object_update(detail, more);
		json_decref(more);
	}
	run_denial_note(r, "limit", what, (uint64_t)(count > 0 ? count : 1), policy, remedy, detail);
}

void run_limit_denials(struct run *r)
{
	const struct sbx_run_request *q = &r->req;
	if (r->timed_out && !r->stopped_for_platform)
		limit(r, "timeoutMs", 1, q->timeout_ms, "timeoutMs",
		      "raise timeoutMs (the server's maximum applies) or split the work into shorter runs", NULL);
	else if (r->timed_out)
		limit(r, "platform deadline", 1, r->platform_deadline_ms, "--platform-deadline-ms",
		      "the scheduler's wall clock ended the job: ask it for more time (e.g. sbatch --time)", NULL);
	if (r->cg.oom_killed)
		limit(r, "memoryBytes", r->cg.oom_kills, q->limits.memory_bytes, "limits.memoryBytes",
		      "raise limits.memoryBytes or use less memory (stream data instead of loading it whole)",
		      json_pack("{s:I}", "oomKills", (json_int_t)r->cg.oom_kills));
	if (r->cg.pids_refused > 0)
		limit(r, "pids", r->cg.pids_refused, q->limits.pids, "limits.pids",
		      "raise limits.pids or start fewer processes and threads (fork and clone failed with EAGAIN)",
		      NULL);
	if (r->quota_hit && r->quota_state == SBX_QUOTA_OVER_FILES)
		limit(r, "maxWorkspaceFiles", 1, (long long)q->max_workspace_files, "maxWorkspaceFiles",
		      "raise maxWorkspaceFiles or keep fewer files (archive them)", json_pack("{s:s}", "reason", r->quota_why));
	else if (r->quota_hit)
		limit(r, "maxWorkspaceBytes", 1, (long long)q->max_workspace_bytes, "maxWorkspaceBytes",
		      "raise maxWorkspaceBytes or write less into the workspace (/tmp is not kept)",
		      json_pack("{s:s}", "reason", r->quota_why));
	/* The file size bound stands for what was left of the quota: a single
	 * write past it failed with EFBIG or died of SIGXFSZ. */
	if (r->ran && WIFSIGNALED(r->wait_status) && WTERMSIG(r->wait_status) == SIGXFSZ)
		limit(r, "fileSizeLimitBytes", 1,
		      (long long)json_integer_value(json_object_get(q->spec, "fileSizeLimitBytes")), "maxWorkspaceBytes",
		      "a file grew past what is left of maxWorkspaceBytes: raise it or write less", NULL);
	if (r->too_deep)
		limit(r, "workspace depth", r->too_deep_removed, SBX_WORKSPACE_MAX_DEPTH, "(fixed)",
		      "keep directories nested less deeply: what lay deeper was removed", NULL);
	if (r->truncated)
		limit(r, "maxOutputBytes", 1, (long long)q->max_output_bytes, "maxOutputBytes",
		      "raise maxOutputBytes, or write large output to a file in the workspace and read it from there",
		      json_pack("{s:I,s:I}", "stdoutBytes", (json_int_t)r->out.s[0].total, "stderrBytes",
				(json_int_t)r->out.s[1].total));
}
