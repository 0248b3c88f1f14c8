/* store_events.h — a managed execution's events beside its log chunks:
 * state changes, sbx-run's events and the final result, each placed after
 * the last chunk stored before it (cursor, seq), and the read side the
 * event streams (sse.c) use: their own read-only connection. */
#ifndef SBX_HTTPD_STORE_EVENTS_H
#define SBX_HTTPD_STORE_EVENTS_H

#include "../lib/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The JSON of one stored event is at most this; a larger one is stored as
 * {event, at, omitted: true, bytes}. */
#define STORE_EVENT_MAX (128u << 10)

/* A place in an execution's sequence: after chunk `cursor` (0: before
 * any) and, at that cursor, after event `seq` (0: the chunk itself). */
struct store_position {
	long long cursor, seq;
};

/* Inside the caller's transaction (db_lock held), after everything the
 * record has: a "state" event {state, at}; a finished record's "result"
 * event, rec (taken) with result's members but stdout and stderr (the
 * chunks hold those); or an event of type with its JSON text. The bytes
 * stored (the caller counts them once committed), or -1. */
long long store_event_state(const char *id, const char *state, const char *at);
long long store_event_result(const char *id, json_t *rec, json_t *result);
long long store_event_put(const char *id, const char *type, const char *text);

/* The read side: a connection of its own (WAL: it never waits for a
 * writer's fsync); what it reads is committed. */
int store_events_open(const char *path, struct sbx_error *e);

/* The record's state ("" when there is none), 0; -1 on a read error. */
int store_events_state(const char *id, char *state, size_t size);
/* Where the record's result event is: 1, or 0 when it has none. */
int store_events_result_at(const char *id, struct store_position *at);

/* One row after a position: an output chunk (seq 0, kind "stdout" or
 * "stderr", text) or an event (seq >= 1, kind its type, text its JSON).
 * Return false to stop reading. */
typedef bool (*store_row_fn)(void *arg, const struct store_position *at, const char *kind, const char *text,
			     size_t len);
/* Up to limit rows after from, in order: how many were read, or -1. */
int store_events_read(const char *id, const struct store_position *from, int limit, store_row_fn row, void *arg);

#endif
