/* store.c — the managed-execution store: one SQLite file, WAL journal,
 * synchronous=FULL (a record said "completed" survives a power cut),
 * every statement prepared with bound parameters. */
#include "store.h"
#include "store_events.h"
#include "sse_hub.h"
#include "../lib/atomic_file.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/sqlite_open.h"
#include "../lib/datadir.h"
#include "server.h"
#include "../lib/clock.h"

#include <pthread.h>
#include <limits.h>
#include <sqlite3.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS executions ("
	" id TEXT PRIMARY KEY, session_id TEXT NOT NULL, agent_id TEXT NOT NULL, workspace TEXT NOT NULL,"
	" state TEXT NOT NULL, queued_at TEXT NOT NULL, started_at TEXT, finished_at TEXT,"
	" result TEXT, error TEXT, version TEXT, log_truncated INTEGER NOT NULL DEFAULT 0,"
	" next_cursor INTEGER NOT NULL DEFAULT 1, log_bytes INTEGER, result_bytes INTEGER);"
	"CREATE TABLE IF NOT EXISTS log_chunks ("
	" execution_id TEXT NOT NULL, cursor INTEGER NOT NULL, stream TEXT NOT NULL, text TEXT NOT NULL,"
	" PRIMARY KEY (execution_id, cursor)) WITHOUT ROWID;"
	/* Results apart: a record read for its owner or state never walks the
	 * overflow pages of a result that carries megabytes of output. */
	"CREATE TABLE IF NOT EXISTS execution_results (id TEXT PRIMARY KEY, result TEXT NOT NULL);"
	/* Events beside the chunks, in one order (store_events.c). */
	"CREATE TABLE IF NOT EXISTS execution_events ("
	" execution_id TEXT NOT NULL, cursor INTEGER NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,"
	" data TEXT NOT NULL, PRIMARY KEY (execution_id, cursor, seq)) WITHOUT ROWID;";

#define DB (g_server.db)

/* Bytes of every record's log chunks and result (the retention's measure):
 * written under db_lock, read anywhere. */
static long long g_log_bytes;

long long store_log_bytes(void)
{
	return __atomic_load_n(&g_log_bytes, __ATOMIC_RELAXED);
}

void store_log_bytes_add(long long delta)
{
	__atomic_add_fetch(&g_log_bytes, delta, __ATOMIC_RELAXED);
}

/* A store an older sbx-httpd made gets the byte columns, worked out once
 * from what it holds; then the indexes collection walks in finished order. */
static int migrate(sqlite3 *db)
{
	sqlite3_stmt *probe = NULL;
	if (sqlite3_prepare_v2(db, "SELECT log_bytes, result_bytes FROM executions LIMIT 0", -1, &probe, NULL) != SQLITE_OK &&
	    sqlite3_exec(db, "ALTER TABLE executions ADD COLUMN log_bytes INTEGER;"
			     "ALTER TABLE executions ADD COLUMN result_bytes INTEGER;", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	sqlite3_finalize(probe);
	return sqlite3_exec(db,
			    "UPDATE executions SET log_bytes = (SELECT COALESCE(SUM(length(CAST(c.text AS BLOB))), 0)"
			    " FROM log_chunks c WHERE c.execution_id = executions.id) WHERE log_bytes IS NULL;"
			    "UPDATE executions SET result_bytes = COALESCE((SELECT length(CAST(r.result AS BLOB))"
			    " FROM execution_results r WHERE r.id = executions.id), length(CAST(result AS BLOB)), 0)"
			    " WHERE result_bytes IS NULL;"
			    "CREATE INDEX IF NOT EXISTS executions_finished ON executions(finished_at)"
			    " WHERE finished_at IS NOT NULL;"
			    "CREATE INDEX IF NOT EXISTS executions_with_logs ON executions(finished_at)"
			    " WHERE finished_at IS NOT NULL AND log_bytes > 0;"
			    "CREATE INDEX IF NOT EXISTS executions_open ON executions(queued_at) WHERE finished_at IS NULL;",
			    NULL, NULL, NULL);
}

static int backfill_result_events(void);

int store_open(struct server *s, struct sbx_error *e)
{
	char path[PATH_MAX + 64];
	sbx_data_path(s->cfg.data_dir, SBX_DATA_RUNNER_EXECUTIONS, "executions.sqlite", path, sizeof(path));
	if (sbx_sqlite_open(path, schema, 5000, SBX_EXIT_RESOURCE, &s->db, e) != 0)
		return -1;
	/* Never replayed: a record the last process left open is "unknown". */
	sqlite3_stmt *st;
	char now[32];
	sbx_iso_time(sbx_wall_ms(), now);
	sqlite3_prepare_v2(s->db,
			   "UPDATE executions SET state='unknown', finished_at=?1, error='Runner restarted before "
			   "completion was recorded; the command was not replayed' WHERE state IN ('queued','running')",
			   -1, &st, NULL);
	sqlite3_bind_text(st, 1, now, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE || migrate(s->db) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db, "SELECT COALESCE(SUM(log_bytes + result_bytes), 0) FROM executions", -1, &st, NULL) !=
		    SQLITE_OK) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "store", "%s: %s", path, sqlite3_errmsg(s->db));
		return -1;
	}
	g_log_bytes = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	if (backfill_result_events() != 0) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "store", "%s: %s", path, sqlite3_errmsg(s->db));
		return -1;
	}
	return store_events_open(path, e);
}

sqlite3_stmt *store_prepare(const char *sql)
{
	sqlite3_stmt *st = NULL;
	sqlite3_prepare_v2(DB, sql, -1, &st, NULL);
	return st;
}

int store_insert(const char *id, const char *session, const char *agent, const char *workspace,
		 const char *queued_at)
{
	sqlite3_stmt *st = store_prepare("INSERT INTO executions (id, session_id, agent_id, workspace, state, queued_at,"
				   " log_bytes, result_bytes) VALUES (?1, ?2, ?3, ?4, 'queued', ?5, 0, 0)");
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, session, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, agent, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, workspace, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, queued_at, -1, SQLITE_TRANSIENT);
	pthread_mutex_lock(&g_server.db_lock);
	sqlite3_exec(DB, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	long long event = rc == SQLITE_DONE ? store_event_state(id, "queued", queued_at) : 0;
	if (rc == SQLITE_DONE && sqlite3_exec(DB, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		store_log_bytes_add(event > 0 ? event : 0);
	else
		sqlite3_exec(DB, "ROLLBACK", NULL, NULL, NULL);
	pthread_mutex_unlock(&g_server.db_lock);
	return rc == SQLITE_DONE ? 0 : rc == SQLITE_CONSTRAINT ? 1 : -1;
}

static void bind_json(sqlite3_stmt *st, int i, json_t *v)
{
	char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
	if (text)
		sqlite3_bind_text(st, i, text, -1, free);
	else
		sqlite3_bind_null(st, i);
}

/* Readers share this connection and see a transaction as it goes: the
 * result is written before the state that promises it. */
void store_update(const char *id, const char *state, const char *started_at, const char *finished_at,
		  json_t *result, const char *error, json_t *version, bool log_truncated)
{
	char *result_text = result ? json_dumps(result, JSON_COMPACT) : NULL; /* before the lock: megabytes */
	pthread_mutex_lock(&g_server.db_lock);
	sqlite3_exec(DB, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	int rc = SQLITE_DONE;
	long long result_bytes = result_text ? (long long)strlen(result_text) : -1, was = 0;
	if (result) {
		sqlite3_stmt *old = store_prepare("SELECT result_bytes FROM executions WHERE id=?1");
		sqlite3_bind_text(old, 1, id, -1, SQLITE_TRANSIENT);
		if (old && sqlite3_step(old) == SQLITE_ROW)
			was = sqlite3_column_int64(old, 0);
		sqlite3_finalize(old);
		sqlite3_stmt *res = store_prepare("INSERT OR REPLACE INTO execution_results (id, result) VALUES (?1, ?2)");
		sqlite3_bind_text(res, 1, id, -1, SQLITE_TRANSIENT);
		if (result_text)
			sqlite3_bind_text(res, 2, result_text, -1, SQLITE_STATIC);
		rc = res ? sqlite3_step(res) : SQLITE_ERROR;
		sqlite3_finalize(res);
	}
	sqlite3_stmt *st = rc == SQLITE_DONE ? store_prepare("UPDATE executions SET state=?2, started_at=COALESCE(?3, started_at),"
						       " finished_at=COALESCE(?4, finished_at),"
						       " error=COALESCE(?5, error), version=COALESCE(?6, version),"
						       " log_truncated=MAX(log_truncated, ?7),"
						       " result_bytes=COALESCE(?8, result_bytes) WHERE id=?1")
					     : NULL;
	if (st) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, state, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 3, started_at, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 4, finished_at, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 5, error, -1, SQLITE_TRANSIENT);
		bind_json(st, 6, version);
		sqlite3_bind_int(st, 7, log_truncated);
		if (result_bytes >= 0)
			sqlite3_bind_int64(st, 8, result_bytes);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	} else {
		rc = SQLITE_ERROR;
	}
	/* Its events, in the same transaction: a stream that reads the state
	 * finished finds the result after it. One that fails leaves the
	 * state as it is (the stream then ends without a result). */
	long long events = 0;
	if (rc == SQLITE_DONE) {
		char now[32];
		sbx_iso_time(sbx_wall_ms(), now);
		long long a = store_event_state(id, state, finished_at ? finished_at : started_at ? started_at : now);
		long long b = finished_at ? store_event_result(id, store_get(id, NULL, NULL, false), result) : 0;
		if (a < 0 || b < 0)
			sbx_diag("error", "store-write", NULL, "execution %s: its %s event: %s", id, a < 0 ? "state" : "result",
				 sqlite3_errmsg(DB));
		events = (a > 0 ? a : 0) + (b > 0 ? b : 0);
	}
	if (rc != SQLITE_DONE) /* the record keeps its last state: said, never silent */
		sbx_diag("error", "store-write", NULL, "execution %s: %s", id, sqlite3_errmsg(DB));
	sqlite3_exec(DB, rc == SQLITE_DONE ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
	if (rc == SQLITE_DONE)
		store_log_bytes_add((result_bytes >= 0 ? result_bytes - was : 0) + events);
	pthread_mutex_unlock(&g_server.db_lock);
	free(result_text);
	sse_hub_notify(id); /* its event streams read on */
}

static void set_text(json_t *o, const char *key, sqlite3_stmt *st, int col)
{
	const unsigned char *v = sqlite3_column_text(st, col);
	if (v)
		json_object_set_new(o, key, json_string((const char *)v));
}

static void set_json(json_t *o, const char *key, sqlite3_stmt *st, int col)
{
	const unsigned char *v = sqlite3_column_text(st, col);
	json_t *doc = v ? json_loads((const char *)v, JSON_ALLOW_NUL, NULL) : NULL;
	if (doc)
		json_object_set_new(o, key, doc);
}

json_t *store_get(const char *id, const char *session, const char *agent, bool with_result)
{
	sqlite3_stmt *st = store_prepare("SELECT id, session_id, agent_id, state, queued_at, started_at, finished_at,"
				   " CASE WHEN ?4 THEN COALESCE((SELECT r.result FROM execution_results r"
				   " WHERE r.id = executions.id), result) END,"
				   " error, version, log_truncated FROM executions"
				   " WHERE id=?1 AND (?2 IS NULL OR session_id=?2) AND (?3 IS NULL OR agent_id=?3)");
	if (!st)
		return NULL;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, session, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, agent, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 4, with_result);
	json_t *o = NULL;
	if (sqlite3_step(st) == SQLITE_ROW) {
		o = json_object();
		set_text(o, "id", st, 0);
		set_text(o, "sessionId", st, 1);
		set_text(o, "agentId", st, 2);
		set_text(o, "state", st, 3);
		set_text(o, "queuedAt", st, 4);
		set_text(o, "startedAt", st, 5);
		set_text(o, "finishedAt", st, 6);
		set_json(o, "result", st, 7);
		set_text(o, "error", st, 8);
		set_json(o, "version", st, 9);
		if (sqlite3_column_int(st, 10))
			json_object_set_new(o, "logTruncated", json_true());
	}
	sqlite3_finalize(st);
	return o;
}

void store_append_logs(const char *id, const char *stream, const char *text, const size_t *ends, size_t n)
{
	pthread_mutex_lock(&g_server.db_lock);
	sqlite3_exec(DB, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	sqlite3_stmt *st = store_prepare("INSERT INTO log_chunks (execution_id, cursor, stream, text)"
				   " SELECT ?1, next_cursor, ?2, ?3 FROM executions WHERE id=?1");
	sqlite3_stmt *bump = store_prepare("UPDATE executions SET next_cursor = next_cursor + 1, log_bytes = log_bytes + ?2"
				     " WHERE id=?1");
	long long added = 0;
	for (size_t i = 0, start = 0; st && bump && i < n; start = ends[i++]) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, stream, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, text + start, (int)(ends[i] - start), SQLITE_STATIC);
		bool stored = sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(DB) == 1;
		sqlite3_bind_text(bump, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(bump, 2, stored ? (long long)(ends[i] - start) : 0);
		added += stored ? (long long)(ends[i] - start) : 0;
		sqlite3_step(bump);
		sqlite3_reset(st);
		sqlite3_reset(bump);
	}
	sqlite3_finalize(st);
	sqlite3_finalize(bump);
	if (sqlite3_exec(DB, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		store_log_bytes_add(added);
	pthread_mutex_unlock(&g_server.db_lock);
	sse_hub_notify(id);
}

json_t *store_logs(const char *id, long long cursor, long long *next, bool *more)
{
	sqlite3_stmt *st = store_prepare("SELECT cursor, stream, text FROM log_chunks WHERE execution_id=?1 AND cursor>?2"
				   " ORDER BY cursor LIMIT 5");
	json_t *chunks = json_array();
	*next = cursor;
	*more = false;
	if (!st)
		return chunks;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, cursor);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (json_array_size(chunks) == 4) {
			*more = true;
			break;
		}
		*next = sqlite3_column_int64(st, 0);
		const char *text = (const char *)sqlite3_column_text(st, 2);
		json_array_append_new(chunks, json_pack("{s:I,s:s,s:s#}", "cursor", (json_int_t)*next, "stream",
						       (const char *)sqlite3_column_text(st, 1), "text", text ? text : "",
						       text ? (size_t)sqlite3_column_bytes(st, 2) : (size_t)0));
	}
	sqlite3_finalize(st);
	return chunks;
}

/* At startup: every finished record without its result event gets one
 * (at its last cursor, where a result event is): a record a restart
 * turned "unknown", or one an older sbx-httpd made. */
static int backfill_result_events(void)
{
	sqlite3_stmt *st = store_prepare("SELECT id FROM executions e WHERE finished_at IS NOT NULL"
					 " AND state NOT IN ('queued','running') AND NOT EXISTS (SELECT 1 FROM"
					 " execution_events v WHERE v.execution_id = e.id AND v.cursor = e.next_cursor - 1"
					 " AND v.type = 'result')");
	if (!st)
		return -1;
	int rc = 0;
	long long added = 0;
	json_t *ids = json_array();
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(ids, json_string((const char *)sqlite3_column_text(st, 0)));
	sqlite3_finalize(st);
	pthread_mutex_lock(&g_server.db_lock);
	sqlite3_exec(DB, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	size_t i;
	json_t *v;
	json_array_foreach(ids, i, v) {
		const char *id = json_string_value(v);
		long long n = store_event_result(id, store_get(id, NULL, NULL, false), NULL);
		rc = n < 0 ? -1 : rc;
		added += n > 0 ? n : 0;
	}
	json_decref(ids);
	if (sqlite3_exec(DB, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
		rc = -1;
	else if (rc == 0)
		store_log_bytes_add(added);
	pthread_mutex_unlock(&g_server.db_lock);
	return rc;
}

void store_events_append(const char *id, const char *const *types, char *const *texts, size_t n)
{
	long long added = 0;
	bool ok = true;
	pthread_mutex_lock(&g_server.db_lock);
	sqlite3_exec(DB, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	for (size_t i = 0; ok && i < n; i++) {
		long long b = store_event_put(id, types[i], texts[i]);
		ok = b >= 0;
		added += ok ? b : 0;
	}
	if (ok && sqlite3_exec(DB, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		store_log_bytes_add(added);
	else
		sqlite3_exec(DB, "ROLLBACK", NULL, NULL, NULL);
	pthread_mutex_unlock(&g_server.db_lock);
	sse_hub_notify(id);
}
