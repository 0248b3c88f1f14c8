/* store_retention.c — collection of the managed-execution store: finished
 * records older than the retention go whole; past the byte cap the oldest
 * finished records' logs go first, then the oldest records. One bounded
 * transaction per step; a queued or running record is never touched. */
#include "store.h"
#include "server.h"
#include "../lib/clock.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <string.h>

#define STORE_CHUNKS_PER_STEP 64 /* chunks of at most 16 KiB: at most 1 MiB per transaction (events: 64 too) */
#define FINISHED "finished_at IS NOT NULL AND state NOT IN ('queued','running')"

enum victim { NONE, LOGS, WHOLE };

/* The first id the query names (?1: the age bound, ?2: the replay bound;
 * a query may use either). */
static bool first_id(const char *sql, const char *bound, const char *guard, char id[161])
{
	sqlite3_stmt *st = store_prepare(sql);
	bool found = false;
	if (!st)
		return false;
	sqlite3_bind_text(st, 1, bound, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, guard, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_bytes(st, 0) < 161) {
		memcpy(id, sqlite3_column_text(st, 0), (size_t)sqlite3_column_bytes(st, 0) + 1);
		found = true;
	}
	sqlite3_finalize(st);
	return found;
}

/* Oldest first: a record past the age, else (over the cap) the oldest
 * finished logs, else the oldest record finished before the guard (its
 * client has had that long to read it) that still holds bytes. */
static enum victim pick(const struct store_retention *r, long long now_ms, char id[161])
{
	char cutoff[32], guard[32];
	sbx_iso_time(now_ms - r->max_age_ms, cutoff);
	sbx_iso_time(now_ms - r->replay_guard_ms, guard);
	if (r->max_age_ms && first_id("SELECT id FROM executions WHERE " FINISHED " AND finished_at < ?1 AND queued_at < ?2"
				      " ORDER BY finished_at LIMIT 1",
				      cutoff, guard, id))
		return WHOLE;
	if (!r->max_bytes || store_log_bytes() - store_open_bytes() <= r->max_bytes)
		return NONE;
	if (first_id("SELECT id FROM executions WHERE " FINISHED " AND log_bytes > 0"
		     " ORDER BY finished_at LIMIT 1",
		     cutoff, guard, id))
		return LOGS;
	if (first_id("SELECT id FROM executions WHERE " FINISHED " AND result_bytes > 0 AND finished_at < ?2"
		     " ORDER BY finished_at LIMIT 1",
		     cutoff, guard, id))
		return WHOLE;
	return NONE;
}

static int run(const char *sql, const char *id)
{
	sqlite3_stmt *st = store_prepare(sql);
	if (!st)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, STORE_CHUNKS_PER_STEP); /* where the statement has a ?2 */
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? sqlite3_changes(g_server.db) : -1;
}

/* Its next chunks; once they are all gone, its byte count (LOGS) or the
 * record and result (WHOLE). A reader meanwhile sees retentionTruncated. */
static int step(const char *id, enum victim what, struct store_collected *out)
{
	long long freed = 0;
	pthread_mutex_lock(&g_server.db_lock);
	sqlite3_exec(g_server.db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	int ok = run("UPDATE executions SET log_truncated = 1 WHERE id = ?1 AND log_bytes > 0", id) >= 0;
	int gone = ok ? run("DELETE FROM log_chunks WHERE execution_id = ?1 AND cursor IN (SELECT cursor FROM log_chunks"
			    " WHERE execution_id = ?1 ORDER BY cursor LIMIT ?2)",
			    id)
		      : -1;
	/* Then its events (64 a step), but for the result while the
	 * record stays: its bytes are the result's. */
	int events = gone >= 0 && gone < STORE_CHUNKS_PER_STEP
			     ? run(what == WHOLE ? "DELETE FROM execution_events WHERE execution_id = ?1 AND (cursor, seq) IN"
						   " (SELECT cursor, seq FROM execution_events WHERE execution_id = ?1 LIMIT ?2)"
						 : "DELETE FROM execution_events WHERE execution_id = ?1 AND (cursor, seq) IN"
						   " (SELECT cursor, seq FROM execution_events WHERE execution_id = ?1"
						   " AND type != 'result' LIMIT ?2)",
				   id)
			     : 0;
	ok = gone >= 0 && events >= 0;
	gone = events > 0 ? STORE_CHUNKS_PER_STEP : gone; /* not done while events went */
	if (ok && gone < STORE_CHUNKS_PER_STEP) {
		sqlite3_stmt *st = store_prepare("SELECT COALESCE(log_bytes, 0), COALESCE(result_bytes, 0) FROM executions"
						 " WHERE id = ?1");
		if (st) {
			sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
			if (sqlite3_step(st) == SQLITE_ROW)
				freed = sqlite3_column_int64(st, 0) + (what == WHOLE ? sqlite3_column_int64(st, 1) : 0);
			sqlite3_finalize(st);
		}
		ok = st && (what == WHOLE ? run("DELETE FROM execution_results WHERE id = ?1", id) >= 0 &&
						    run("DELETE FROM executions WHERE id = ?1", id) >= 0
					  : run("UPDATE executions SET log_bytes = 0 WHERE id = ?1", id) >= 0);
	}
	ok = ok && sqlite3_exec(g_server.db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
	if (!ok)
		sqlite3_exec(g_server.db, "ROLLBACK", NULL, NULL, NULL);
	else if (gone < STORE_CHUNKS_PER_STEP) {
		store_log_bytes_add(-freed);
		out->records += what == WHOLE;
		out->logs += what == LOGS;
		out->bytes += freed;
	}
	pthread_mutex_unlock(&g_server.db_lock);
	return ok ? 1 : -1;
}

long long store_open_bytes(void)
{
	sqlite3_stmt *st = store_prepare("SELECT COALESCE(SUM(log_bytes + result_bytes), 0) FROM executions"
					 " WHERE finished_at IS NULL");
	long long n = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	return n;
}

int store_collect_step(const struct store_retention *r, long long now_ms, struct store_collected *out)
{
	char id[161];
	enum victim what = pick(r, now_ms, id);
	if (what == NONE)
		return 0;
	return step(id, what, out) > 0 ? 1 : 0;
}
