/* job_manifest.c — a job's signed OutputManifest: every output's key, size
 * and sha256, the media and checkpoints, the final state and the event
 * chain's last MAC, MAC'd like an event line and PUT to its presigned URL. */
#include "run.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* A run that was fine so far ends as infra when its results did not land. */
static int worse(int status, const struct sbx_error *e)
{
	if (status != SBX_EXIT_OK && status != SBX_EXIT_WORKLOAD)
		return status;
	return e->exit_code == SBX_EXIT_INTEGRITY ? SBX_EXIT_INTEGRITY : SBX_EXIT_INTERNAL;
}

static void mark_result(json_t *result, int status, const struct sbx_error *e)
{
	const char *cls = sbx_exit_failure_class(status);
	json_object_set_new(result, "failureClass", cls ? json_string(cls) : json_null());
	if (json_is_null(json_object_get(result, "error")) || !json_object_get(result, "error"))
		json_object_set_new(result, "error", json_string(e->message));
}

static json_t *build(struct run *r, json_t *result, int status, bool partial)
{
	struct run_job *j = r->job;
	const char *cls = sbx_exit_failure_class(status);
	json_t *outputs = json_object_get(r->outputs, "files");
	bool complete = json_is_true(json_object_get(r->outputs, "complete")) && !j->failed.exit_code &&
			json_array_size(j->outputs) == json_array_size(outputs);
	json_t *m = json_pack("{s:i,s:s,s:s,s:s,s:b,s:o,s:i,s:O,s:O,s:O,s:O,s:b}",
		"manifestVersion", 1, "runId", j->doc.run_id, "executionId", r->req.execution_id,
		"state", status == SBX_EXIT_OK ? "completed" : "failed", "partial", partial,
		"failureClass", cls ? json_string(cls) : json_null(), "exitStatus", status,
		"exitCode", json_object_get(result, "exitCode"), "outputs", j->outputs, "media", j->media,
		"checkpoints", j->checkpoints, "outputsComplete", complete);
	json_object_set(m, "error", json_object_get(result, "error"));
	json_object_set(m, "startedAt", json_object_get(result, "startedAt"));
	json_object_set(m, "finishedAt", json_object_get(result, "finishedAt"));
	json_object_set_new(m, "deadline", json_object_get(result, "deadline") ? json_incref(json_object_get(result, "deadline"))
									     : json_null());
	json_object_set_new(m, "events", json_pack("{s:I,s:s}", "count", (json_int_t)r->signer.seq, "lastMac", r->signer.prev));
	json_object_set_new(m, "supervisor", json_pack("{s:s,s:s,s:o}", "program", "sbx-run", "version", SBX_VERSION,
						      "image", j->doc.image ? json_string(j->doc.image) : json_null()));
	json_t *snap = json_object_get(result, "workspaceSnapshot");
	json_object_set_new(m, "workspaceSnapshot", json_is_object(snap) ? json_incref(json_object_get(snap, "digest")) : json_null());
	return m;
}

/* Signed and PUT; 0 or -1 with e. */
static int put_manifest(struct run *r, json_t *m, char mac[65], struct sbx_error *e)
{
	struct run_job *j = r->job;
	char *text = sbx_signed_json(j->doc.key, j->doc.key_len, m, mac);
	int rc = text ? sbx_store_put(&j->store, j->doc.manifest_url, text, strlen(text), "application/json", e) : -1;
	if (!text)
		sbx_error_set(e, SBX_EXIT_INTERNAL, "manifest-failed", "the manifest could not be made");
	free(text);
	if (rc != 0)
		sbx_error_prefix(e, "writing the manifest");
	return rc;
}

int run_job_manifest_start(struct run *r, struct sbx_error *e)
{
	struct run_job *j = r->job;
	char mac[65] = "";
	json_t *m = json_pack("{s:i,s:s,s:s,s:s,s:b,s:n,s:n,s:n,s:[],s:[],s:[],s:b}", "manifestVersion", 1, "runId",
			      j->doc.run_id, "executionId", r->req.execution_id, "state", "running", "partial", 1,
			      "failureClass", "exitStatus", "exitCode", "outputs", "media", "checkpoints",
			      "outputsComplete", 0);
	json_object_set_new(m, "events", json_pack("{s:I,s:s}", "count", (json_int_t)r->signer.seq, "lastMac", r->signer.prev));
	int rc = put_manifest(r, m, mac, e);
	json_decref(m);
	if (rc != 0) {
		/* A dead manifest grant: nothing runs and nothing else is sent. */
		j->failed = *e;
		j->manifest_refused = true;
	}
	return rc;
}

int run_job_manifest(struct run *r, json_t *result, int status)
{
	struct run_job *j = r->job;
	struct sbx_error e;
	if (j->manifest_refused)
		return status == SBX_EXIT_OK || status == SBX_EXIT_WORKLOAD ? SBX_EXIT_INTERNAL : status;
	if (j->failed.exit_code) {
		status = worse(status, &j->failed);
		mark_result(result, status, &j->failed);
	}
	if (j->uploading)
		run_job_set_deadline(r, true); /* the slice kept back for this */
	bool partial = r->timed_out || r->cancelled || j->terminated_ms || j->failed.exit_code || j->skipped ||
		       !json_is_true(json_object_get(r->outputs, "complete"));
	json_t *m = build(r, result, status, partial);
	char mac[65] = "";
	int rc = put_manifest(r, m, mac, &e);
	json_decref(m);
	if (rc != 0) {
		sbx_diag("error", e.code, NULL, "%s", e.message);
		status = worse(status, &e);
		mark_result(result, status, &e);
	}
	run_event("manifest", r, json_pack("{s:b,s:b,s:s,s:s}", "written", rc == 0, "partial", partial,
					   "state", status == SBX_EXIT_OK ? "completed" : "failed", "manifestMac", mac));
	return status;
}
