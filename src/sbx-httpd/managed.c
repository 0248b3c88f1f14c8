/* managed.c — managed shell executions (runner-api 5.6): owned by the
 * runner, recorded in SQLite, FIFO per canonical workspace, output stored
 * as it arrives in chunks of at most 4096 characters cut at UTF-8
 * boundaries, cancelled on request, never replayed after a restart. */
#include "server.h"
#include "reply.h"
#include "body.h"
#include "environments.h"
#include "handlers.h"
#include "metrics_run.h"
#include "../lib/clock.h"
#include "collect.h"
#include "gate.h"
#include "managed_events.h"
#include "request.h"
#include "sequence.h"
#include "../lib/exitcodes.h"
#include "store.h"
#include "../lib/json.h"

#include <pthread.h>
#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <microhttpd.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK_UNITS 4096 /* JavaScript string length: UTF-16 code units */
#define TAIL_READ (1u << 20) /* output read per step: one transaction of chunks */
#define RECORD_TEXT_MAX (4u << 20) /* bytes of JSON of each output in the record's result; the logs hold all */

struct tail {
	const char *stream;
	int fd;
	char pending[4];     /* an incomplete UTF-8 sequence from the last read */
	size_t n_pending;
};

struct managed_run {
	struct api_exec x;
	json_t *run;
	volatile bool cancel;
	struct child *child;
	struct tail tails[2];
	struct waiter *place;        /* its place in the workspace's line */
	char *read_buf;              /* TAIL_READ + 4 bytes while it runs */
	struct managed_events events; /* sbx-run's events on their way to the store */
	struct managed_run *next;
};

/* Length of the UTF-8 sequence a lead byte starts (1 for anything invalid). */
static size_t seq_len(unsigned char b)
{
	return b >= 0xf0 && b < 0xf8 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
}

/* Stores text (valid UTF-8) as chunks of at most CHUNK_UNITS UTF-16 units,
 * all in one transaction. */
static void store_chunks(const char *id, const char *stream, const char *text, size_t n)
{
	size_t cap = n / 1024 + 2, count = 0, i = 0, units = 0;
	size_t *ends = malloc(cap * sizeof(*ends));
	if (!ends)
		return;
	while (i < n) {
		size_t len = seq_len((unsigned char)text[i]), u = len == 4 ? 2 : 1;
		if (units + u > CHUNK_UNITS) {
			ends[count++] = i;
			units = 0;
		}
		units += u;
		i += len;
	}
	if (i > (count ? ends[count - 1] : 0))
		ends[count++] = i;
	store_append_logs(id, stream, text, ends, count);
	free(ends);
}

/* Reads what sbx-run has written to one output file since the last call. */
static void tail_read(struct managed_run *m, struct tail *t)
{
	if (!m->read_buf)
		return;
	if (t->fd < 0) {
		char path[PATH_MAX + 128];
		snprintf(path, sizeof(path), "%s/%.6s.txt", m->child->exec_dir, t->stream);
		if ((t->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
			return;
	}
	char *buf = m->read_buf;
	for (;;) {
		memcpy(buf, t->pending, t->n_pending);
		ssize_t n = read(t->fd, buf + t->n_pending, TAIL_READ);
		if (n <= 0)
			return;
		size_t total = t->n_pending + (size_t)n, end = total;
		/* Hold back a sequence the writer has not finished. */
		for (size_t back = 1; back <= 3 && back <= total; back++) {
			unsigned char b = (unsigned char)buf[total - back];
			if ((b & 0xc0) == 0x80)
				continue;
			if (b >= 0xc0 && seq_len(b) > back)
				end = total - back;
			break;
		}
		t->n_pending = total - end;
		memcpy(t->pending, buf + end, t->n_pending);
		json_t *text = sbx_json_stringn_lossy(buf, end); /* invalid bytes become U+FFFD, NUL stays */
		if (text && end)
			store_chunks(m->x.id, t->stream, json_string_value(text), json_string_length(text));
		json_decref(text);
	}
}

/* At the end: a character the writer never finished is U+FFFD, as in the
 * record, not dropped. */
static void tail_flush(struct managed_run *m, struct tail *t)
{
	json_t *text = t->n_pending ? sbx_json_stringn_lossy(t->pending, t->n_pending) : NULL;
	if (text && json_string_length(text))
		store_chunks(m->x.id, t->stream, json_string_value(text), json_string_length(text));
	json_decref(text);
	t->n_pending = 0;
}

static bool tick(void *arg)
{
	struct managed_run *m = arg;
	if (m->child) {
		tail_read(m, &m->tails[0]);
		tail_read(m, &m->tails[1]);
	}
	/* After the output read with them: an event follows what was written before it. */
	managed_events_flush(&m->events, m->x.id);
	return m->cancel;
}

static void unregister(struct managed_run *m)
{
	pthread_mutex_lock(&g_server.lock);
	for (struct managed_run **p = &g_server.managed; *p; p = &(*p)->next)
		if (*p == m) {
			*p = m->next;
			break;
		}
	pthread_mutex_unlock(&g_server.lock);
}

/* Ends the record after a run: completed on exit 0, failed on another exit
 * or an error, cancelled when asked; the snapshot is its version. */
static void finish(struct managed_run *m, struct child *c)
{
	char now[32];
	sbx_iso_time(sbx_wall_ms(), now);
	json_t *res = c->result;
	const char *failure = json_string_value(json_object_get(res, "failureClass"));
	const char *error = json_string_value(json_object_get(res, "error"));
	metrics_execution_end(METRICS_MANAGED, &m->x, c); /* counted before the record says it ended */
	json_t *api = res ? runner_api_result(&m->x, res) : NULL;
	int fds[2];
	if (api && runner_open_streams(c, fds) == 0) {
		bool cut[2];
		json_object_set_new(api, "stdout", runner_stream_text(fds[0], RECORD_TEXT_MAX, &cut[0]));
		json_object_set_new(api, "stderr", runner_stream_text(fds[1], RECORD_TEXT_MAX, &cut[1]));
		if (cut[0] || cut[1]) /* the record keeps a head; the logs hold every byte */
			json_object_set_new(api, "outputCut", json_true());
		close(fds[0]);
		close(fds[1]);
	} else if (api) {
		json_object_set_new(api, "stdout", json_string(""));
		json_object_set_new(api, "stderr", json_string(""));
	}
	json_t *version = json_object_get(api, "workspaceSnapshot");
	bool truncated = json_is_true(json_object_get(res, "truncated"));
	const char *state;
	if (m->cancel && (c->exit_code == 10 || (failure && !strcmp(failure, "cancelled"))))
		state = "cancelled";
	else if (res && runner_ran(c) && !failure)
		state = json_integer_value(json_object_get(res, "exitCode")) == 0 ? "completed" : "failed";
	else
		state = "failed";
	if (c->started && res && !version && runner_ran(c)) {
		state = "failed";
		error = "Execution ended, but workspace version commit failed: no snapshot was recorded";
	}
	if (strcmp(state, "completed") && strcmp(state, "failed"))
		error = error ? error : NULL;
	store_update(m->x.id, state, NULL, now, runner_ran(c) || !strcmp(state, "cancelled") ? api : NULL,
		     !strcmp(state, "completed") ? NULL : (error ? error : (c->diag[0] ? c->diag : NULL)),
		     version, truncated);
	json_decref(api);
	collect_kick(COLLECT_EXECUTIONS); /* its bytes may put the store past its cap */
}

/* An event line of its sbx-run, kept for the event stream. */
static void relay(void *arg, const char *name, json_t *event)
{
	struct managed_run *m = arg;
	managed_events_take(&m->events, m->x.id, name, event);
}

/* sbx-run runs: the record says so, its output files are tailed and its
 * events kept. */
static void running(void *arg, struct child *c)
{
	struct managed_run *m = arg;
	store_update(m->x.id, "running", m->x.started_at, NULL, NULL, NULL, NULL, false);
	m->child = c;
	c->on_event = relay;
	c->on_event_arg = m;
}

static void *worker(void *arg)
{
	struct managed_run *m = arg;
	metrics_execution_accepted(&m->x);
	/* The place in line was taken when the execution was accepted. */
	struct waiter *turn = gate_wait(m->place, tick, m);
	if (!turn || m->cancel) {
		char now[32];
		metrics_execution_end(METRICS_MANAGED, &m->x, NULL);
		sbx_iso_time(sbx_wall_ms(), now);
		store_update(m->x.id, "cancelled", NULL, now, NULL, NULL, NULL, false);
	} else {
		struct child c;
		struct sbx_error e;
		m->read_buf = malloc(TAIL_READ + 4);
		struct sequence_hooks h = { .tick = tick, .started = running, .arg = m };
		if (sequence_run(&m->x, m->run, &c, &h, &e) != 0) {
			char now[32];
			metrics_execution_end(METRICS_MANAGED, &m->x, NULL);
			sbx_iso_time(sbx_wall_ms(), now);
			store_update(m->x.id, "failed", NULL, now, NULL, e.message, NULL, false);
		} else {
			tick(m);
			tail_flush(m, &m->tails[0]);
			tail_flush(m, &m->tails[1]);
			managed_events_end(&m->events, m->x.id);
			finish(m, &c);
			m->child = NULL;
			runner_forget(&c); /* its logs and result are in SQLite now */
			runner_free(&c);
		}
	}
	gate_leave(turn);
	unregister(m);
	for (int i = 0; i < 2; i++)
		if (m->tails[i].fd >= 0)
			close(m->tails[i].fd);
	api_exec_close(&m->x);
	json_decref(m->run);
	free(m->read_buf);
	free(m);
	return NULL;
}

/* The managed rule: an id of the grammar (a replay is the store's 400). */
static unsigned valid_id(const char *id, struct sbx_error *e)
{
	size_t n = id ? strlen(id) : 0;
	if (n >= 1 && n <= 160 && strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:.-") == n)
		return 0;
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "Invalid Execution ID");
	return 400;
}

enum MHD_Result handle_managed_start(struct req *r)
{
	enum MHD_Result sent;
	char now[32];
	json_t *doc = signed_body(r, "Invalid or expired execution signature", &sent);
	if (!doc)
		return sent;
	struct managed_run *m = calloc(1, sizeof(*m));
	struct sbx_error e;
	/* Owned by the runner: no client deadline ever kills it. */
	json_object_set_new(doc, "executionTimeoutMs", json_integer(0));
	if (!m)
		sbx_error_set(&e, SBX_EXIT_INTERNAL, "out-of-memory", "out of memory");
	unsigned refused = m ? sequence_accept(doc, true, valid_id, &m->x, &m->run, &e) : 400;
	json_decref(doc);
	if (refused) {
		free(m);
		return reply_error(r, refused, "%s", e.message);
	}
	/* Queued means in line: the workspace's FIFO order is queuedAt's. */
	char key[PATH_MAX + 8];
	long long joined = 0;
	snprintf(key, sizeof(key), "ws:%llu:%llu", m->x.ws_dev, m->x.ws_ino);
	m->place = gate_join(key, &joined);
	sbx_iso_time(joined, now);
	int stored = m->place ? store_insert(m->x.id, m->x.session, m->x.agent, m->x.workspace, now) : -1;
	if (stored != 0) {
		gate_leave(m->place);
		api_exec_close(&m->x);
		json_decref(m->run);
		free(m);
		return reply_error(r, 400, "%s",
				   stored > 0 ? "Execution ID has already been used; query it instead of replaying the command"
					      : "the execution store refused the record");
	}
	m->tails[0] = (struct tail){ .stream = "stdout", .fd = -1 };
	m->tails[1] = (struct tail){ .stream = "stderr", .fd = -1 };
	json_t *reply = json_pack("{s:s,s:s,s:s,s:s,s:s}", "agentId", m->x.agent, "sessionId", m->x.session, "id",
				  m->x.id, "state", "queued", "queuedAt", now);
	pthread_mutex_lock(&g_server.lock);
	m->next = g_server.managed;
	g_server.managed = m;
	pthread_mutex_unlock(&g_server.lock);
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, worker, m) != 0) {
		gate_leave(m->place);
		unregister(m);
		store_update(m->x.id, "failed", NULL, now, NULL, "the runner could not start a worker", NULL, false);
		api_exec_close(&m->x);
		json_decref(m->run);
		free(m);
	}
	return reply_json(r, 202, reply);
}

/* The record for the owner named in the query, or a 400 already sent. */
static json_t *owned(struct req *r, const char *id, bool with_result, enum MHD_Result *sent)
{
	const char *session = query(r, "sessionId"), *agent = query(r, "agentId");
	json_t *rec = store_get(id, session ? session : "", agent ? agent : "", with_result);
	if (!rec)
		*sent = reply_error(r, 400, "Execution not found for this Agent");
	return rec;
}

enum MHD_Result handle_managed_get(struct req *r, const char *id)
{
	enum MHD_Result sent;
	json_t *rec = owned(r, id, true, &sent);
	return rec ? reply_json(r, 200, rec) : sent;
}

enum MHD_Result handle_managed_logs(struct req *r, const char *id)
{
	enum MHD_Result sent;
	json_t *rec = owned(r, id, false, &sent);
	if (!rec)
		return sent;
	const char *text = query(r, "cursor");
	long long cursor = 0;
	if (text && *text) {
		char *end;
		cursor = strtoll(text, &end, 10);
		if (*end || text[0] < '0' || text[0] > '9' || strlen(text) > 16 || cursor > 9007199254740991LL) {
			json_decref(rec);
			return reply_error(r, 400, "Invalid log cursor");
		}
	}
	long long next;
	bool more;
	json_t *chunks = store_logs(id, cursor, &next, &more);
	bool retention = json_is_true(json_object_get(rec, "logTruncated"));
	json_decref(rec);
	return reply_json(r, 200, json_pack("{s:o,s:I,s:b,s:b}", "chunks", chunks, "nextCursor", (json_int_t)next,
					    "truncated", more, "retentionTruncated", retention));
}

enum MHD_Result handle_managed_cancel(struct req *r, const char *id)
{
	enum MHD_Result sent;
	json_t *rec = owned(r, id, true, &sent);
	if (!rec)
		return sent;
	pthread_mutex_lock(&g_server.lock);
	for (struct managed_run *m = g_server.managed; m; m = m->next)
		if (!strcmp(m->x.id, id))
			m->cancel = true;
	pthread_mutex_unlock(&g_server.lock);
	return reply_json(r, 202, rec);
}
