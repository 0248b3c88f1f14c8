/* store.h — managed executions in SQLite (WAL, synchronous=FULL): the
 * records, their ids (used as long as their record is kept), their log
 * chunks, and their collection (store_retention.c). */
#ifndef SBX_HTTPD_STORE_H
#define SBX_HTTPD_STORE_H

#include "server.h"
#include "../lib/error.h"

#include <stdbool.h>

/* Opens <data>/runner-executions/executions.sqlite; records a restart
 * interrupted (queued or running) become "unknown", never replayed. */
int store_open(struct server *s, struct sbx_error *e);

/* A new queued record; 1 when the id was ever used, -1 on a store error. */
int store_insert(const char *id, const char *session, const char *agent, const char *workspace,
		 const char *queued_at);
/* Sets the state and whichever of the other fields are given (NULL: kept). */
void store_update(const char *id, const char *state, const char *started_at, const char *finished_at,
		  json_t *result, const char *error, json_t *version, bool log_truncated);
/* The ManagedExecution for its owner, or NULL (unknown, or someone else's);
 * without its result unless with_result (a log page needs only the owner).
 * session and agent NULL: whoever owns it. A state change is also an
 * event (store_events.h), in the same transaction. */
json_t *store_get(const char *id, const char *session, const char *agent, bool with_result);
/* Appends a chunk; the cursor is the execution's next (from 1). */
/* Appends n chunks of one stream in one transaction: chunk i is
 * text[ends[i - 1], ends[i]) (from 0 for the first). */
void store_append_logs(const char *id, const char *stream, const char *text, const size_t *ends, size_t n);
/* Appends n events of sbx-run (types[i], the JSON texts[i]) in one
 * transaction; their bytes count as the record's log bytes. */
void store_events_append(const char *id, const char *const *types, char *const *texts, size_t n);
/* Up to 4 chunks after cursor; *more when others follow them. */
json_t *store_logs(const char *id, long long cursor, long long *next, bool *more);

/* Bytes of every record's log chunks and result, as committed. */
long long store_log_bytes(void);
void store_log_bytes_add(long long delta);
sqlite3_stmt *store_prepare(const char *sql);

/* store_retention.c: what may be collected, and what a pass collected. */
struct store_retention {
	long long max_age_ms;        /* a finished record older goes (0: no age limit) */
	long long max_bytes;         /* finished records' bytes past it: the oldest logs go, then records (0: no cap) */
	long long replay_guard_ms;   /* a record queued (or, for the cap, finished) more recently stays */
};
struct store_collected {
	long long records;           /* records removed with their logs and results */
	long long logs;              /* records whose logs alone were removed */
	long long bytes;             /* the log and result bytes both freed */
};
/* One bounded step (at most STORE_CHUNKS_PER_STEP chunks, one transaction):
 * 1 when it removed something and more may be due, 0 when nothing is. A
 * queued or running record is never touched. */
int store_collect_step(const struct store_retention *r, long long now_ms, struct store_collected *out);
/* Bytes of the records still queued or running (never collected). */
long long store_open_bytes(void);

#endif
