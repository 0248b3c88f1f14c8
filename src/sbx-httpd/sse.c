/* sse.c — GET /shell-executions/:id/events, sbx's extension: a managed
 * execution as Server-Sent Events read from the store at the client's
 * pace (output chunks, state changes, sbx-run's events, the result), each
 * with its place as its id, so Last-Event-ID resumes right after it. */
#include "handlers.h"
#include "server.h"
#include "reply.h"
#include "sse_hub.h"
#include "store.h"
#include "store_events.h"
#include "../lib/clock.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FILL (16u << 10)       /* a read from the store stops once this much is waiting */
#define ROWS_PER_READ 16
#define WRITE_MAX (16u << 10)  /* handed to libmicrohttpd per call */
#define ID_TEXT_MAX 40         /* "<cursor>.<seq>" */

struct sse {
	struct sse_watch w;
	struct store_position at;    /* the last event sent (or the client's Last-Event-ID) */
	char *buf;                   /* framed events not yet sent: FILL plus one event at most */
	size_t len, off, cap;
	bool ending;                 /* the last event is in buf */
	bool failed;                 /* no room for an event */
};

static bool finished(const char *state)
{
	return state && *state && strcmp(state, "queued") != 0 && strcmp(state, "running") != 0;
}

/* "12" or "12.3": digits, at most a safe integer each. */
static bool parse_position(const char *text, struct store_position *at)
{
	long long part[2] = { 0, 0 };
	int n = 0;
	const char *p = text;
	for (; n < 2; n++) {
		size_t digits = strspn(p, "0123456789");
		if (digits == 0 || digits > 16)
			return false;
		for (size_t i = 0; i < digits; i++)
			part[n] = part[n] * 10 + (p[i] - '0');
		if (part[n] > 9007199254740991LL)
			return false;
		p += digits;
		if (*p != '.')
			break;
		p++;
	}
	if (*p || n > 1)
		return false;
	at->cursor = part[0];
	at->seq = part[1];
	return true;
}

static void put(struct sse *s, const char *text, size_t n)
{
	if (n == 0)
		return;
	if (!s->buf || s->len + n > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : FILL + (4u << 10);
		if (cap < s->len + n)
			cap = s->len + n;
		char *grown = realloc(s->buf, cap);
		if (!grown) {
			s->failed = true;
			return;
		}
		s->buf = grown;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, text, n);
	s->len += n;
}

static void put_str(struct sse *s, const char *text)
{
	put(s, text, strlen(text));
}

/* One event: its id (none for "end"), its type, its data (one JSON line). */
static void frame(struct sse *s, const struct store_position *at, const char *type, const char *data, size_t n)
{
	char head[ID_TEXT_MAX + 96];
	int h = 0;
	if (at && at->seq)
		h = snprintf(head, sizeof(head), "id: %lld.%lld\n", at->cursor, at->seq);
	else if (at)
		h = snprintf(head, sizeof(head), "id: %lld\n", at->cursor);
	snprintf(head + h, sizeof(head) - (size_t)h, "event: %.64s\ndata: ", type);
	put_str(s, head);
	put(s, data, n);
	put_str(s, "\n\n");
}

static void end(struct sse *s, const char *reason)
{
	char data[128];
	int n = snprintf(data, sizeof(data), "{\"reason\":\"%s\"}", reason);
	frame(s, NULL, "end", data, (size_t)n);
	s->ending = true;
}

static bool on_row(void *arg, const struct store_position *at, const char *kind, const char *text, size_t len)
{
	struct sse *s = arg;
	if (at->seq == 0) {
		json_t *chunk = json_pack("{s:I,s:s,s:s#}", "cursor", (json_int_t)at->cursor, "stream", kind, "text", text, len);
		char *data = chunk ? json_dumps(chunk, JSON_COMPACT) : NULL;
		json_decref(chunk);
		if (!data) {
			s->failed = true;
			return false;
		}
		frame(s, at, "output", data, strlen(data));
		free(data);
	} else if (!memchr(text, '\n', len) && !memchr(text, '\r', len)) { /* always: stored compact */
		frame(s, at, kind, text, len);
	}
	s->at = *at;
	if (!strcmp(kind, "result") && at->seq) {
		s->ending = true;
		return false;
	}
	return s->len < FILL && !s->failed;
}

/* What the store has after s->at: -1 when it cannot be read. */
static int fill(struct sse *s)
{
	char state[32];
	/* The state first: once it reads finished, every row (the result
	 * included, same transaction) is there to read. */
	if (store_events_state(s->w.id, state, sizeof(state)) != 0)
		return -1;
	if (!*state) {
		end(s, "gone");
		return 0;
	}
	int n = store_events_read(s->w.id, &s->at, ROWS_PER_READ, on_row, s);
	if (n < 0 || s->failed)
		return -1;
	if (n == 0 && finished(state) && !s->ending)
		end(s, "finished"); /* a result that could not be stored */
	return 0;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct sse *s = cls;
	for (;;) {
		if (s->off < s->len) {
			size_t n = s->len - s->off;
			n = n < max ? n : max;
			n = n < WRITE_MAX ? n : WRITE_MAX;
			memcpy(buf, s->buf + s->off, n);
			s->off += n;
			return (ssize_t)n;
		}
		s->len = s->off = 0;
		if (s->cap > 2 * FILL) { /* one large event: its room goes with it */
			free(s->buf);
			s->buf = NULL;
			s->cap = 0;
		}
		if (s->ending)
			return MHD_CONTENT_READER_END_OF_STREAM;
		long long now = sbx_mono_ms();
		if (now - s->w.started_ms >= g_server.cfg.sse_max_s * 1000) {
			end(s, "lifetime");
			continue;
		}
		sse_hub_arm(&s->w);
		if (fill(s) != 0)
			return MHD_CONTENT_READER_END_WITH_ERROR; /* the client reconnects from its last id */
		if (s->len) {
			s->w.last_sent_ms = now;
			continue;
		}
		if (now - s->w.last_sent_ms >= g_server.cfg.sse_keepalive_s * 1000) {
			put_str(s, ": keep-alive\n\n");
			s->w.last_sent_ms = now;
			continue;
		}
		if (sse_hub_suspend(&s->w))
			return 0; /* resumed by a store write, the keep-alive or the lifetime */
	}
}

static void release(void *cls)
{
	struct sse *s = cls;
	sse_hub_leave(&s->w);
	free(s->buf);
	free(s);
}

enum MHD_Result handle_managed_events(struct req *r, const char *id)
{
	struct store_position from = { 0, 0 };
	const char *last = header(r, "last-event-id");
	if (!last)
		last = query(r, "lastEventId");
	if (last && *last && !parse_position(last, &from))
		return reply_error(r, 400, "Invalid Last-Event-ID");
	const char *session = query(r, "sessionId"), *agent = query(r, "agentId");
	json_t *rec = store_get(id, session ? session : "", agent ? agent : "", false);
	if (!rec)
		return reply_error(r, 404, "Execution not found for this Agent");
	bool done = finished(json_string_value(json_object_get(rec, "state")));
	json_decref(rec);
	/* Past its result: nothing more will come (204 stops an EventSource). */
	struct store_position end_at;
	if (done && store_events_result_at(id, &end_at) == 1 &&
	    (from.cursor > end_at.cursor || (from.cursor == end_at.cursor && from.seq >= end_at.seq))) {
		struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		return resp ? reply_response(r, 204, resp, "text/event-stream") : MHD_NO;
	}
	struct sse *s = calloc(1, sizeof(*s));
	if (!s)
		return reply_error(r, 503, "The runner has no memory for another event stream; retry later");
	snprintf(s->w.id, sizeof(s->w.id), "%s", id);
	s->w.conn = r->conn;
	s->at = from;
	if (!sse_hub_join(&s->w)) {
		free(s);
		return reply_error(r, 503, "The runner serves as many event streams as it allows (%lld, SBX_SSE_MAX_CLIENTS); retry later",
				   g_server.cfg.sse_max_clients);
	}
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, WRITE_MAX, reader, s, release);
	if (!resp) {
		release(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "x-accel-buffering", "no"); /* a proxy in front passes events at once */
	return reply_response(r, 200, resp, "text/event-stream; charset=utf-8");
}
