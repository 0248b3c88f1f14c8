/* report.c — events on stdout (JSON lines) and the result, also written
 * atomically as result.json: a crash leaves no result.json or a whole one. */
#include "run.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/atomic_file.h"
#include "../lib/io.h"
#include "../lib/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

long long run_now_ms(void)
{
	return sbx_wall_ms();
}

static json_t *iso_time(long long ms)
{
	char buf[SBX_ISO_TIME_SIZE];
	if (!ms)
		return json_null();
	sbx_iso_time(ms, buf);
	return json_string(buf);
}

void run_event(const char *event, struct run *r, json_t *extra)
{
	json_t *ev = json_pack("{s:s,s:s,s:o}", "event", event, "executionId", r->req.execution_id,
			       "at", iso_time(run_now_ms()));
	if (extra)
		json_object_update(ev, extra);
	char *line = sbx_signer_line(&r->signer, ev);
	if (line) {
		fputs(line, stdout);
		fputc('\n', stdout);
		fflush(stdout);
	}
	free(line);
	json_decref(ev);
	json_decref(extra);
}

/* A captured stream as text: invalid UTF-8 becomes U+FFFD. */
static json_t *stream_text(const char *path)
{
	struct sbx_error e;
	size_t len;
	char *text = sbx_read_file_capped(path, (size_t)1 << 40, &len, &e);
	json_t *v = text ? sbx_json_stringn_lossy(text, len) : json_string("");
	free(text);
	return v;
}

/* The worker's part of the result. */
static json_t *worker_report(struct run *r)
{
	struct worker *w = &r->worker;
	if (!w->media)
		return json_null();
	return json_pack("{s:I,s:O,s:O,s:O,s:b,s:b,s:I}", "messages", (json_int_t)w->messages,
			 "result", w->result ? w->result : json_null(), "error", w->error ? w->error : json_null(),
			 "media", w->media, "trackingDropped", w->tracking_dropped, "logDropped", w->log_dropped,
			 "storedBytes", (json_int_t)w->stored_bytes);
}

json_t *run_result(struct run *r)
{
	json_t *created = json_array(), *modified = json_array(), *deleted = json_array();
	if (r->ran && r->after.v)
		sbx_snap_fingerprint_diff(&r->before, &r->after, created, modified, deleted);
	json_t *exit_code = json_null();
	if (r->ran && WIFEXITED(r->wait_status) && !r->timed_out && !r->cancelled && !r->quota_hit && !r->too_deep)
		exit_code = json_integer(WEXITSTATUS(r->wait_status));
	else if (r->ran && WIFSIGNALED(r->wait_status))
		exit_code = json_integer(128 + WTERMSIG(r->wait_status));
	else if (r->ran && WIFEXITED(r->wait_status))
		exit_code = json_integer(WEXITSTATUS(r->wait_status));
	const char *cls = sbx_exit_failure_class(r->exit_code);
	json_t *env = json_object_get(r->provenance, "env");
	json_t *res = json_pack(
		"{s:s,s:s,s:o,s:b,s:I,s:I,s:b,s:b,s:o,s:o,s:o,s:I,s:o,s:o,s:o,s:o,s:O,s:O,s:O,s:o}",
		"executionId", r->req.execution_id, "language", r->req.language, "exitCode", exit_code,
		"truncated", r->truncated, "stdoutBytes", (json_int_t)r->out.s[0].total,
		"stderrBytes", (json_int_t)r->out.s[1].total, "timedOut", r->timed_out, "cancelled", r->cancelled,
		"failureClass", cls ? json_string(cls) : json_null(),
		"error", r->error[0] ? json_string(r->error) : json_null(),
		"startedAt", iso_time(r->started_at_ms),
		"durationMs", (json_int_t)(r->finished_at_ms && r->started_at_ms ? r->finished_at_ms - r->started_at_ms : 0),
		"finishedAt", iso_time(r->finished_at_ms),
		"createdFiles", created, "modifiedFiles", modified, "deletedFiles", deleted,
		"environmentVariables", env ? env : json_null(),
		"workingDirectory", json_object_get(r->provenance, "cwd") ? json_object_get(r->provenance, "cwd") : json_null(),
		"workspaceSnapshot", r->snapshot ? r->snapshot : json_null(),
		"limits", sbx_cgroup_report(&r->cg, &r->req.limits));
	/* The captured streams by reference; their text too unless asked not to. */
	json_object_set_new(res, "streams", r->ran ? json_pack("{s:o,s:o}", "stdout", sbx_output_reference(&r->out.s[0]),
							       "stderr", sbx_output_reference(&r->out.s[1]))
						   : json_null());
	if (!r->output_by_reference) {
		json_object_set_new(res, "stdout", r->ran ? stream_text(r->out.s[0].path) : json_string(""));
		json_object_set_new(res, "stderr", r->ran ? stream_text(r->out.s[1].path) : json_string(""));
	}
	json_int_t tmp = json_integer_value(json_object_get(r->req.spec, "tmpSizeBytes"));
	json_object_set_new(res, "tmpSizeBytes", json_integer(tmp ? tmp : (1ll << 30)));
	json_object_set_new(res, "coreDumps", json_false());
	json_object_set_new(res, "worker", worker_report(r));
	json_object_set_new(res, "outputs", r->outputs ? json_incref(r->outputs) : json_null());
	json_object_set_new(res, "devMode", json_boolean(r->dev_mode));
	json_object_set_new(res, "deadline", r->timed_out ? json_string(r->stopped_for_platform ? "platform" : "timeoutMs")
							 : json_null());
	json_object_set_new(res, "setIdBitsCleared", json_integer(r->setid_cleared));
	json_object_set_new(res, "workspaceUid", r->workload_uid >= 0 ? json_integer(r->workload_uid) : json_null());
	json_object_set_new(res, "tooDeepDirectoriesRemoved", json_integer(r->too_deep_removed));
	if (r->req.speculative) /* its pending change (sbx-run(1) SPECULATIVE RUNS) */
		json_object_set_new(res, "speculative", r->spec.report ? json_incref(r->spec.report) : json_null());
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		json_object_set_new(res, "supervisorMaxRssKiB", json_integer(ru.ru_maxrss));
	return res;
}

int run_write_result(struct run *r, json_t *result, struct sbx_error *e)
{
	if (r->transient) /* the caller takes the finished event */
		return 0;
	char path[PATH_MAX + 256];
	char *text = json_dumps(result, JSON_COMPACT);
	snprintf(path, sizeof(path), "%s/result.json", r->exec_dir);
	int rc = text ? sbx_atomic_replace(path, text, strlen(text), 0600, !r->transient, e) : -1;
	free(text);
	return rc;
}
