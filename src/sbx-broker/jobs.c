/* jobs.c — submitting (checks in upstream's order, npu.md 2.4), reading
 * with the session check, and cancelling: a queued job at once, a
 * running one through its drainer (SIGTERM, SIGKILL after 2 s). */
#include "broker.h"
#include "../lib/uuid.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/path.h"
#include "../lib/text.h"
#include "../lib/datadir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *refuse(struct sbx_error *e, const char *code, const char *message)
{
	sbx_error_set(e, SBX_EXIT_USAGE, code, "%s", message);
	return NULL;
}

static char *trim_copy(const char *s)
{
	return s ? sbx_trim_dup(s, strlen(s)) : NULL;
}

/* Ids name log files: letters, digits, '.', '_', '-', not starting with '.'. */
static bool safe_id(const char *id)
{
	return *id && *id != '.' && strlen(id) <= 128 &&
	       strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(id);
}

static char *projects_workspace(const struct broker *b, const char *ws, struct sbx_error *e)
{
	char projects[PATH_MAX + 16];
	sbx_data_path(b->data, SBX_DATA_PROJECTS, NULL, projects, sizeof(projects));
	char *root = realpath(projects, NULL), *real = ws && *ws ? realpath(ws, NULL) : NULL;
	bool inside = root && real && sbx_path_is_within(root, real) && strcmp(root, real) != 0;
	free(root);
	if (!inside) {
		free(real);
		refuse(e, "bad-request", "NPU workspaceRoot must be inside the configured data/projects directory");
		return NULL;
	}
	return real;
}

static int insert(const struct broker *b, const char *id, const char *session, const char *workload,
		  const char *workspace, const char *revision, const json_t *inputs)
{
	char now[SBX_ISO_TIME_SIZE];
	sbx_iso_time(sbx_wall_ms(), now);
	sqlite3_stmt *st = broker_sql(b, "INSERT INTO jobs (id, session_id, workload_id, workspace, revision, inputs,"
					 " state, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', ?7, ?7)");
	if (!st)
		return -1;
	char *text = json_dumps(inputs, JSON_COMPACT);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, session, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, workload, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, workspace, -1, SQLITE_TRANSIENT);
	if (revision)
		sqlite3_bind_text(st, 5, revision, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 6, text ? text : "{}", -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 7, now, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	free(text);
	return rc == SQLITE_DONE ? 0 : rc == SQLITE_CONSTRAINT ? 1 : -1;
}

json_t *broker_submit(struct broker *b, const json_t *req, struct sbx_error *e)
{
	if (!b->enabled)
		return refuse(e, "disabled", "NPU Broker is disabled");
	if (!json_is_object(req))
		return refuse(e, "bad-request", "The NPU job request must be a JSON object");
	const char *wl_id = json_string_value(json_object_get(req, "workloadId"));
	if (!wl_id || !*wl_id)
		return refuse(e, "bad-request", "workloadId is required");
	const json_t *wl = broker_workload(b, wl_id);
	if (!wl) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", "Unknown NPU workload: %.200s", wl_id);
		return NULL;
	}
	char *session = trim_copy(json_string_value(json_object_get(req, "sessionId")));
	const char *revision = json_string_value(json_object_get(req, "environmentRevisionId"));
	const json_t *inputs = json_object_get(req, "inputs");
	char *workspace = NULL, *id = NULL;
	json_t *job = NULL;

	if (!session || !*session || strlen(session) > 256) {
		refuse(e, "bad-request", "sessionId is required");
		goto out;
	}
	if (inputs && !json_is_object(inputs)) {
		refuse(e, "bad-request", "inputs must be an object");
		goto out;
	}
	char *dumped = inputs ? json_dumps(inputs, JSON_COMPACT) : NULL;
	bool too_big = dumped && strlen(dumped) > BROKER_INPUTS_MAX;
	free(dumped);
	if (too_big) {
		refuse(e, "bad-request", "inputs larger than 64 KiB");
		goto out;
	}
	if (json_is_true(json_object_get(wl, "requiresEnvironmentRevision"))) {
		char python[PATH_MAX], site[PATH_MAX];
		if (!revision || !*revision) {
			refuse(e, "bad-request", "environmentRevisionId is required for this NPU workload");
			goto out;
		}
		if (broker_managed_python(revision, python, site, sizeof(python), e) != 0)
			goto out;
	}
	if (!(workspace = projects_workspace(b, json_string_value(json_object_get(req, "workspaceRoot")), e)))
		goto out;
	const char *asked = json_string_value(json_object_get(req, "jobId"));
	char uuid[37];
	sbx_uuid4("", uuid, sizeof(uuid));
	id = asked ? trim_copy(asked) : strdup(uuid);
	if (id && !*id) {
		free(id);
		id = strdup(uuid);
	}
	if (!id || !safe_id(id)) {
		refuse(e, "bad-request", "jobId must be 1-128 letters, digits, '.', '_' or '-', not starting with '.'");
		goto out;
	}
	if (broker_job_exists(b, id)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "duplicate", "NPU job already exists: %s", id);
		goto out;
	}
	if (json_is_true(json_object_get(wl, "rejectAf3Intent")) && broker_af3_check(workspace, inputs, wl_id, e) != 0)
		goto out;
	json_t *empty = json_object();
	int rc = insert(b, id, session, wl_id, workspace, revision && *revision ? revision : NULL, inputs ? inputs : empty);
	json_decref(empty);
	if (rc == 1)
		sbx_error_set(e, SBX_EXIT_USAGE, "duplicate", "NPU job already exists: %s", id);
	else if (rc != 0)
		sbx_error_set(e, SBX_EXIT_INTERNAL, "store", "cannot record the NPU job: %s", sqlite3_errmsg(b->db));
	else
		job = broker_job_json(b, id, false);
out:
	free(session);
	free(workspace);
	free(id);
	return job;
}

json_t *broker_owned(const struct broker *b, const char *id, const char *session, const char *unknown_code,
		     const char *unknown_message, struct sbx_error *e)
{
	if (!session || !*session)
		return refuse(e, "bad-request", "session_id is required for NPU job access");
	json_t *job = broker_job_json(b, id, false);
	if (!job) {
		sbx_error_set(e, SBX_EXIT_USAGE, unknown_code, unknown_message, id);
		return NULL;
	}
	if (strcmp(json_string_value(json_object_get(job, "sessionId")), session) != 0) {
		json_decref(job);
		return refuse(e, "bad-request", "NPU job not found in this Session");
	}
	return job;
}

json_t *broker_cancel(struct broker *b, const char *id, const char *session, struct sbx_error *e)
{
	if (!session || !*session)
		return refuse(e, "bad-request", "sessionId is required for NPU job cancel");
	json_t *job = broker_owned(b, id, session, "unknown", "Unknown NPU job: %s", e);
	if (!job)
		return NULL;
	const char *state = json_string_value(json_object_get(job, "state"));
	if (!strcmp(state, "queued") || !strcmp(state, "running")) {
		char now[SBX_ISO_TIME_SIZE];
		sbx_iso_time(sbx_wall_ms(), now);
		/* Whichever wins, the drainer claiming it or this, wins alone. */
		sqlite3_stmt *st = broker_sql(b, "UPDATE jobs SET state = 'cancelled', updated_at = ?2, finished_at = ?2"
						 " WHERE id = ?1 AND state = 'queued'");
		sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, now, -1, SQLITE_TRANSIENT);
		sqlite3_step(st);
		bool was_queued = sqlite3_changes(b->db) > 0;
		sqlite3_finalize(st);
		if (!was_queued) {
			st = broker_sql(b, "UPDATE jobs SET cancel_requested = 1, updated_at = ?2 WHERE id = ?1 AND state = 'running'");
			sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(st, 2, now, -1, SQLITE_TRANSIENT);
			sqlite3_step(st);
			sqlite3_finalize(st);
		}
		/* The job as it is now (a running one still running), then the poke. */
		json_decref(job);
		job = broker_job_json(b, id, false);
		if (!was_queued)
			broker_poke_drainer(b);
	}
	return job;
}
