/* job_records.c — jobs in SQLite (WAL, synchronous=FULL, bound parameters
 * only): one row per job, updated per transition, never per output chunk;
 * the output itself is appended to files under logs/. */
#include "broker.h"
#include "../lib/atomic_file.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/sqlite_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_READ_CAP (2ull << 30)

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS jobs ("
	" seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, session_id TEXT NOT NULL,"
	" workload_id TEXT NOT NULL, workspace TEXT NOT NULL, revision TEXT, inputs TEXT NOT NULL,"
	" state TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, started_at TEXT,"
	" finished_at TEXT, exit_code INTEGER, error TEXT, created_files TEXT,"
	" truncated INTEGER NOT NULL DEFAULT 0, cancel_requested INTEGER NOT NULL DEFAULT 0, audit TEXT);";

int broker_store_open(struct broker *b, struct sbx_error *e)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/logs", b->dir);
	if (sbx_mkdir_p(path, 0700, e) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/jobs.sqlite", b->dir);
	return sbx_sqlite_open(path, schema, 10000, SBX_EXIT_INTERNAL, &b->db, e);
}

void broker_store_close(struct broker *b)
{
	sqlite3_close(b->db);
	b->db = NULL;
}

sqlite3_stmt *broker_sql(const struct broker *b, const char *sql)
{
	sqlite3_stmt *st = NULL;
	sqlite3_prepare_v2(b->db, sql, -1, &st, NULL);
	return st;
}

static json_t *text_or_null(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return t ? json_string((const char *)t) : NULL;
}

static json_t *read_log(const struct broker *b, const char *id, const char *ext)
{
	char path[PATH_MAX + 256];
	size_t len;
	struct sbx_error e;
	snprintf(path, sizeof(path), "%s/logs/%s.%s", b->dir, id, ext);
	char *text = sbx_read_file_capped(path, LOG_READ_CAP, &len, &e);
	/* Invalid UTF-8 from a workload becomes U+FFFD, never an unreadable job. */
	json_t *s = sbx_json_string_lossy(text ? text : "");
	free(text);
	return s;
}

static void set_if(json_t *job, const char *key, json_t *v)
{
	if (v)
		json_object_set_new(job, key, v);
}

json_t *broker_job_json(const struct broker *b, const char *id, bool summary)
{
	sqlite3_stmt *st = broker_sql(b, "SELECT id, session_id, workload_id, workspace, revision, inputs, state,"
					 " created_at, updated_at, started_at, finished_at, exit_code, error,"
					 " created_files, truncated, audit FROM jobs WHERE id = ?1");
	if (!st)
		return NULL;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	json_t *job = NULL;
	if (sqlite3_step(st) == SQLITE_ROW) {
		json_t *inputs = json_loads((const char *)sqlite3_column_text(st, 5), 0, NULL);
		json_t *logs = json_pack("{s:o,s:o,s:b}", "stdout", summary ? json_string("") : read_log(b, id, "stdout"),
					 "stderr", summary ? json_string("") : read_log(b, id, "stderr"), "truncated",
					 sqlite3_column_int(st, 14));
		job = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id", text_or_null(st, 0), "sessionId",
				text_or_null(st, 1), "workloadId", text_or_null(st, 2), "workspaceRoot",
				summary ? json_string("") : text_or_null(st, 3), "inputs", inputs ? inputs : json_object(),
				"state", text_or_null(st, 6), "createdAt", text_or_null(st, 7), "updatedAt",
				text_or_null(st, 8), "logs", logs);
		set_if(job, "environmentRevisionId", text_or_null(st, 4));
		set_if(job, "startedAt", text_or_null(st, 9));
		set_if(job, "finishedAt", text_or_null(st, 10));
		if (sqlite3_column_type(st, 11) != SQLITE_NULL)
			json_object_set_new(job, "exitCode", json_integer(sqlite3_column_int(st, 11)));
		set_if(job, "error", text_or_null(st, 12));
		if (sqlite3_column_type(st, 13) != SQLITE_NULL)
			set_if(job, "createdFiles", json_loads((const char *)sqlite3_column_text(st, 13), 0, NULL));
		if (!summary && sqlite3_column_type(st, 15) != SQLITE_NULL)
			set_if(job, "audit", json_loads((const char *)sqlite3_column_text(st, 15), 0, NULL));
	}
	sqlite3_finalize(st);
	return job;
}

bool broker_job_exists(const struct broker *b, const char *id)
{
	sqlite3_stmt *st = broker_sql(b, "SELECT 1 FROM jobs WHERE id = ?1");
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	bool found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

static void bind_json(sqlite3_stmt *st, int i, const json_t *v)
{
	char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	if (text)
		sqlite3_bind_text(st, i, text, -1, free);
	else
		sqlite3_bind_null(st, i);
}

int broker_set_state(const struct broker *b, const char *id, const char *state, const char *error,
		     const json_t *exit_code, const json_t *created_files)
{
	char now[SBX_ISO_TIME_SIZE];
	sbx_iso_time(sbx_wall_ms(), now);
	sqlite3_stmt *st = broker_sql(b, "UPDATE jobs SET state = ?2, error = ?3, exit_code = ?4, updated_at = ?5,"
					 " finished_at = ?5, created_files = ?6 WHERE id = ?1");
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, state, -1, SQLITE_TRANSIENT);
	if (error)
		sqlite3_bind_text(st, 3, error, -1, SQLITE_TRANSIENT);
	if (json_is_integer(exit_code))
		sqlite3_bind_int64(st, 4, json_integer_value(exit_code));
	sqlite3_bind_text(st, 5, now, -1, SQLITE_TRANSIENT);
	bind_json(st, 6, created_files);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}
