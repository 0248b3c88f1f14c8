/* store_events.c — events of managed executions in SQLite, each placed
 * after the last log chunk stored before it, so that one (cursor, seq)
 * orders output and events for an event stream (written inside store.c's
 * transactions); and the stream's reads, on a read-only connection of
 * their own. */
#include "store_events.h"
#include "server.h"
#include "../lib/exitcodes.h"

#include <sqlite3.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MEMBER_KEPT_MAX 1024 /* a result too large for its event keeps its members up to this */
#define READ_BUSY_MS 200     /* a reader (a poll thread) waits at most this for a lock */

/* After everything stored for the record so far. */
#define PLACE_AFTER_ALL                                                                               \
	" SELECT ?1, e.next_cursor - 1, COALESCE((SELECT MAX(v.seq) FROM execution_events v"          \
	" WHERE v.execution_id = ?1 AND v.cursor = e.next_cursor - 1), 0) + 1, ?2, ?3"                \
	" FROM executions e WHERE e.id = ?1"

static sqlite3 *rdb; /* the read side */

static sqlite3_stmt *write_prepare(const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(g_server.db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

/* One event after everything else; its bytes are counted in column
 * (log_bytes or result_bytes). The bytes, or -1. */
static long long put(const char *id, const char *type, const char *text, size_t len, const char *column)
{
	sqlite3_stmt *st = write_prepare("INSERT INTO execution_events (execution_id, cursor, seq, type, data)" PLACE_AFTER_ALL);
	char sql[96];
	snprintf(sql, sizeof(sql), "UPDATE executions SET %s = COALESCE(%s, 0) + ?2 WHERE id = ?1", column, column);
	sqlite3_stmt *count = write_prepare(sql);
	int rc = SQLITE_ERROR;
	if (st && count) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, type, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, text, (int)len, SQLITE_STATIC);
		rc = sqlite3_step(st);
		bool stored = rc == SQLITE_DONE && sqlite3_changes(g_server.db) == 1;
		sqlite3_bind_text(count, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(count, 2, stored ? (long long)len : 0);
		if (rc == SQLITE_DONE)
			rc = sqlite3_step(count);
		if (!stored)
			len = 0;
	}
	sqlite3_finalize(st);
	sqlite3_finalize(count);
	return rc == SQLITE_DONE ? (long long)len : -1;
}

static long long put_json(const char *id, const char *type, json_t *data, const char *column)
{
	char *text = json_dumps(data, JSON_COMPACT);
	json_decref(data);
	long long n = text ? put(id, type, text, strlen(text), column) : -1;
	free(text);
	return n;
}

long long store_event_state(const char *id, const char *state, const char *at)
{
	return put_json(id, "state", json_pack("{s:s,s:s}", "state", state, "at", at), "log_bytes");
}

/* The record's result without stdout and stderr (the chunks have them); a
 * result still too large keeps its small members only, with resultCut. */
static void summarize(json_t *rec, json_t *result)
{
	json_t *summary = json_copy(result);
	json_object_del(summary, "stdout");
	json_object_del(summary, "stderr");
	char *text = json_dumps(summary, JSON_COMPACT);
	if (text && strlen(text) > STORE_EVENT_MAX / 2) {
		const char *key;
		json_t *v;
		void *tmp;
		json_object_foreach_safe(summary, tmp, key, v)
		{
			char *member = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			if (!member || strlen(member) > MEMBER_KEPT_MAX)
				json_object_del(summary, key);
			free(member);
		}
		json_object_set_new(rec, "resultCut", json_true());
	}
	free(text);
	json_object_set_new(rec, "result", summary);
}

long long store_event_result(const char *id, json_t *rec, json_t *result)
{
	if (!rec)
		return -1;
	if (json_is_object(result))
		summarize(rec, result);
	return put_json(id, "result", rec, "result_bytes");
}

long long store_event_put(const char *id, const char *type, const char *text)
{
	return put(id, type, text, strlen(text), "log_bytes");
}

int store_events_open(const char *path, struct sbx_error *e)
{
	if (sqlite3_open_v2(path, &rdb, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK ||
	    sqlite3_busy_timeout(rdb, READ_BUSY_MS) != SQLITE_OK) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "store", "%s: %s (read side)", path, rdb ? sqlite3_errmsg(rdb) : "cannot open");
		return -1;
	}
	return 0;
}

static sqlite3_stmt *read_prepare(const char *sql, const char *id)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(rdb, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	return st;
}

int store_events_state(const char *id, char *state, size_t size)
{
	sqlite3_stmt *st = read_prepare("SELECT state FROM executions WHERE id = ?1", id);
	if (!st)
		return -1;
	int rc = sqlite3_step(st);
	*state = '\0';
	if (rc == SQLITE_ROW)
		snprintf(state, size, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

int store_events_result_at(const char *id, struct store_position *at)
{
	sqlite3_stmt *st = read_prepare("SELECT cursor, seq FROM execution_events WHERE execution_id = ?1"
					" AND type = 'result' ORDER BY cursor DESC, seq DESC LIMIT 1", id);
	int found = st && sqlite3_step(st) == SQLITE_ROW;
	if (found) {
		at->cursor = sqlite3_column_int64(st, 0);
		at->seq = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return found;
}

int store_events_read(const char *id, const struct store_position *from, int limit, store_row_fn row, void *arg)
{
	/* Both tables in their primary key's order, merged (no sort). */
	sqlite3_stmt *st = read_prepare("SELECT cursor, 0, stream, text FROM log_chunks WHERE execution_id = ?1"
					" AND cursor > ?2 UNION ALL SELECT cursor, seq, type, data FROM execution_events"
					" WHERE execution_id = ?1 AND (cursor, seq) > (?2, ?3) ORDER BY 1, 2 LIMIT ?4", id);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 2, from->cursor);
	sqlite3_bind_int64(st, 3, from->seq);
	sqlite3_bind_int(st, 4, limit);
	int n = 0, rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_position at = { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1) };
		const char *text = (const char *)sqlite3_column_text(st, 3);
		n++;
		if (!row(arg, &at, (const char *)sqlite3_column_text(st, 2), text ? text : "",
			 text ? (size_t)sqlite3_column_bytes(st, 3) : 0))
			break;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? n : -1;
}
