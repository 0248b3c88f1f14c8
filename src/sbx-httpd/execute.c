/* execute.c — POST /execute and /execute-shell (runner-api 5.1): signature,
 * JSON, kernelMode, workspace, the 60 s executionId window, then the
 * (session, agent) FIFO and the workspace's, then one sbx-run. A client
 * that goes away takes its execution with it. */
#include "server.h"
#include "reply.h"
#include "body.h"
#include "environments.h"
#include "handlers.h"
#include "metrics_run.h"
#include "../lib/clock.h"
#include "gate.h"
#include "request.h"
#include "sequence.h"
#include "../lib/exitcodes.h"
#include "result_stream.h"

#include <pthread.h>
#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_WINDOW_MS 60000

/* Records the id unless it was seen within the window: false means 409. */
static bool claim_id(const char *id)
{
	long long now = sbx_wall_ms();
	pthread_mutex_lock(&g_server.lock);
	const char *key;
	json_t *v, *tmp;
	json_object_foreach_safe(g_server.seen_ids, tmp, key, v)
		if (now - json_integer_value(v) > ID_WINDOW_MS)
			json_object_del(g_server.seen_ids, key);
	bool fresh = !json_object_get(g_server.seen_ids, id);
	if (fresh)
		json_object_set_new(g_server.seen_ids, id, json_integer(now));
	pthread_mutex_unlock(&g_server.lock);
	return fresh;
}

static struct active *track(const struct api_exec *x)
{
	struct active *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	snprintf(a->execution_id, sizeof(a->execution_id), "%s", x->id);
	snprintf(a->session_id, sizeof(a->session_id), "%s", x->session);
	snprintf(a->agent_id, sizeof(a->agent_id), "%s", x->agent);
	snprintf(a->language, sizeof(a->language), "%s", x->language);
	sbx_iso_time(sbx_wall_ms(), a->queued_at);
	pthread_mutex_lock(&g_server.lock);
	a->next = g_server.active;
	g_server.active = a;
	pthread_mutex_unlock(&g_server.lock);
	return a;
}

static void untrack(struct active *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&g_server.lock);
	for (struct active **p = &g_server.active; *p; p = &(*p)->next)
		if (*p == a) {
			*p = a->next;
			break;
		}
	pthread_cond_broadcast(&g_server.active_changed);
	pthread_mutex_unlock(&g_server.lock);
	free(a);
}

struct watch {
	struct req *r;
	struct active *a;
	const struct api_exec *x;
	bool gone;
};

/* Out of the queue is running, as upstream says: /status shows it from
 * now, and the result's startedAt (x->started_at) is this same instant. */
static void mark_running(void *arg)
{
	struct watch *w = arg;
	if (!w->a)
		return;
	pthread_mutex_lock(&g_server.lock);
	w->a->running = true;
	memcpy(w->a->started_at, w->x->started_at, sizeof(w->a->started_at));
	pthread_mutex_unlock(&g_server.lock);
}

/* The legacy rule: an id seen within 60 s is 409. */
static unsigned fresh_id(const char *id, struct sbx_error *e)
{
	if (!id || !*id || claim_id(id))
		return 0;
	sbx_error_set(e, SBX_EXIT_USAGE, "replayed", "Execution ID has already been used");
	return 409;
}

static bool gone(void *arg)
{
	struct watch *w = arg;
	if (!w->gone && client_gone(w->r))
		w->gone = true;
	return w->gone;
}

/* The answer for a run that ended: 200 with the result when the workload
 * ran to an exit; 400 with the upstream's message otherwise. */
static enum MHD_Result answer(struct req *r, const struct api_exec *x, struct child *c)
{
	json_t *res = c->result;
	const char *failure = json_string_value(json_object_get(res, "failureClass"));
	const char *error = json_string_value(json_object_get(res, "error"));
	if (res && runner_ran(c) && !failure) {
		int fds[2];
		if (runner_open_streams(c, fds) != 0)
			return reply_error(r, 500, "the execution's output files are missing or changed");
		struct MHD_Response *resp = result_stream_response(runner_api_result(x, res), fds);
		return resp ? reply_response(r, 200, resp, "application/json; charset=utf-8") : MHD_NO;
	}
	return reply_error(r, 400, "%s", error ? error : c->diag[0] ? c->diag : "the execution failed");
}

enum MHD_Result handle_execute(struct req *r, bool shell)
{
	enum MHD_Result sent;
	char key[PATH_MAX + 600];
	struct api_exec x;
	struct sbx_error e;
	json_t *run = NULL;

	json_t *doc = signed_body(r, "Invalid or expired execution signature", &sent);
	if (!doc)
		return sent;
	unsigned refused = sequence_accept(doc, shell, fresh_id, &x, &run, &e);
	json_decref(doc);
	if (refused)
		return reply_error(r, refused, "%s", e.message);
	metrics_execution_accepted(&x);

	struct watch w = { .r = r, .a = track(&x), .x = &x };
	snprintf(key, sizeof(key), "agent:%s\n%s", x.session, x.agent);
	struct waiter *agent_turn = gate_enter(key, gone, &w), *ws_turn = NULL;
	snprintf(key, sizeof(key), "ws:%llu:%llu", x.ws_dev, x.ws_ino);
	if (agent_turn && !w.gone)
		ws_turn = gate_enter(key, gone, &w);
	struct child c;
	bool ran = false;
	if (ws_turn && !w.gone) {
		struct sequence_hooks h = { .tick = gone, .turn = mark_running, .arg = &w };
		ran = sequence_run(&x, run, &c, &h, &e) == 0;
	}
	gate_leave(ws_turn);
	gate_leave(agent_turn);
	untrack(w.a);
	api_exec_close(&x);
	json_decref(run);
	metrics_execution_end(METRICS_SYNC, &x, ran ? &c : NULL);
	if (w.gone || !ws_turn) {
		if (ran) {
			runner_forget(&c);
			runner_free(&c);
		}
		return MHD_NO; /* nobody to answer: the connection is closed */
	}
	if (!ran)
		return reply_error(r, 400, "%s", e.message);
	enum MHD_Result out = answer(r, &x, &c);
	snprintf(r->run_done, sizeof(r->run_done), "%s", c.internal_id); /* after the answer */
	r->run_done_pid = c.pid;
	r->run_done_reaped = c.reaped;
	runner_free(&c);
	return out;
}
