/* npu.c — the NPU endpoints (runner-api 4 rows 17-23 and 29, 5.5) as
 * sbx-broker and sbx-npu children, with the upstream's deliberately
 * uneven status codes; the broker's capability is read once at startup,
 * and jobs run in an sbx-broker drainer that dies with sbx-httpd. */
#include "npu.h"
#include "server.h"
#include "reply.h"
#include "body.h"
#include "auth.h"
#include "../lib/clock.h"
#include "../lib/program_path.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/stage_call.h"
#include "metrics.h"

#include <pthread.h>
#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NPU_OUTPUT_CAP (2200u << 20)

static json_t *capability;

struct child_answer {
	json_t *out;           /* stdout's JSON on success */
	struct sbx_error e;    /* the stage's diagnostic on failure */
};

/* Runs prog with the given arguments (and body on stdin). */
static int run_child(const char *prog, const char *const *args, const char *body, size_t len,
		     struct child_answer *a)
{
	const char *argv[32] = { prog };
	int n = 1, in = -1;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	memset(a, 0, sizeof(*a));
	if (body)
		in = body_memfd(body, len);
	struct sbx_spawn s = { .argv = argv, .stdin_fd = in, .die_with_parent = true };
	a->out = sbx_stage_call(&s, 0, NPU_OUTPUT_CAP, &a->e);
	metrics_stage_call(prog, a->out != NULL, &a->e);
	if (in >= 0)
		close(in);
	return a->out ? 0 : -1;
}

static int broker(const char *const *args, const char *body, size_t len, struct child_answer *a)
{
	const char *argv[24] = { "--data-dir", g_server.cfg.data_dir };
	int n = 2;
	if (g_server.cfg.npu_broker)
		argv[n++] = "--enable";
	for (int i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (!g_server.prog.broker[0]) {
		memset(a, 0, sizeof(*a));
		sbx_error_set(&a->e, SBX_EXIT_USAGE, "error", "sbx-broker is not installed next to sbx-httpd");
		return -1;
	}
	return run_child(g_server.prog.broker, argv, body, len, a);
}

struct drainer_start {
	pthread_mutex_t lock;
	pthread_cond_t done;
	bool spawned;
};

static void *drainer(void *arg)
{
	struct drainer_start *start = arg;
	const char *argv[] = { g_server.prog.broker, "--data-dir", g_server.cfg.data_dir,
			       g_server.cfg.npu_broker ? "--enable" : "drain", g_server.cfg.npu_broker ? "drain" : NULL, NULL };
	/* This thread waits for it: the death signal follows the thread. */
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .stderr_fd = 2, .new_process_group = true,
			       .die_with_parent = true };
	struct sbx_error e;
	pid_t pid = sbx_spawn_start(&s, NULL, &e);
	pthread_mutex_lock(&start->lock);
	start->spawned = true;
	pthread_cond_signal(&start->done);
	pthread_mutex_unlock(&start->lock);
	int status;
	if (pid > 0)
		waitpid(pid, &status, 0);
	return NULL;
}

/* Returns once the drainer runs: a client that got its 201 can count on it. */
static void start_drainer(void)
{
	static struct drainer_start start = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
	pthread_t t;
	pthread_attr_t attr;
	pthread_mutex_lock(&one_at_a_time);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	start.spawned = false;
	if (pthread_create(&t, &attr, drainer, &start) != 0) {
		sbx_diag("warning", "npu-drainer", NULL, "cannot start the NPU job drainer");
	} else {
		pthread_mutex_lock(&start.lock);
		while (!start.spawned)
			pthread_cond_wait(&start.done, &start.lock);
		pthread_mutex_unlock(&start.lock);
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_unlock(&one_at_a_time);
}

void npu_start(void)
{
	struct child_answer a = { 0 };
	const char *recover[] = { "recover", NULL }, *workloads[] = { "workloads", NULL };
	if (sbx_sibling_program("sbx-npu", g_server.prog.npu, sizeof(g_server.prog.npu)) != 0)
		g_server.prog.npu[0] = '\0';
	if (sbx_sibling_program("sbx-broker", g_server.prog.broker, sizeof(g_server.prog.broker)) != 0)
		g_server.prog.broker[0] = '\0';
	/* What the last process left queued or running is interrupted. */
	if (g_server.prog.broker[0] && broker(recover, NULL, 0, &a) != 0)
		sbx_diag("warning", "npu-recover", NULL, "%s", a.e.message);
	json_decref(a.out);
	if (broker(workloads, NULL, 0, &a) == 0) {
		capability = a.out;
	} else {
		if (g_server.cfg.npu_broker) {
			struct sbx_error e;
			sbx_error_set(&e, SBX_EXIT_USAGE, "npu-broker", "SCIENCE_AGENT_NPU_BROKER is on but the broker cannot start: %.900s", a.e.message);
			sbx_die(&e);
		}
		capability = json_pack("{s:b,s:i,s:[]}", "enabled", 0, "queueConcurrency", 1, "workloads");
	}
}

json_t *npu_capability(void)
{
	return json_deep_copy(capability);
}

json_t *npu_active_jobs(void)
{
	struct child_answer a;
	const char *args[] = { "--active", "list", NULL };
	return broker(args, NULL, 0, &a) == 0 && json_is_array(a.out) ? sbx_json_del_each(a.out, "audit")
								     : (json_decref(a.out), json_array());
}

static const char *session_query(struct req *r)
{
	const char *s = query(r, "session_id") ? query(r, "session_id") : query(r, "sessionId");
	return s && strspn(s, " \t\r\n") != strlen(s) ? s : NULL;
}

static enum MHD_Result answer(struct req *r, unsigned ok, struct child_answer *a)
{
	/* A job's audit (argv, environment, PATH) stays in the broker's records and logs. */
	if (a->out)
		return reply_json(r, ok, sbx_json_del_each(a->out, "audit"));
	unsigned status = !strcmp(a->e.code, "not-found") ? 404 : !strcmp(a->e.code, "not-terminal") ? 409 : 400;
	return reply_error(r, status, "%s", a->e.message);
}

static enum MHD_Result devices(struct req *r)
{
	struct child_answer a;
	const char *refresh = query(r, "refresh");
	const char *args[] = { "list", refresh && !strcmp(refresh, "1") ? "--refresh" : NULL, NULL };
	if (!g_server.prog.npu[0]) {
		char now[32];
		sbx_iso_time(sbx_wall_ms(), now);
		return reply_json(r, 200, json_pack("{s:s,s:[],s:b}", "capturedAt", now, "devices", "supported", 0));
	}
	run_child(g_server.prog.npu, args, NULL, 0, &a);
	return answer(r, 200, &a);
}

static enum MHD_Result submit(struct req *r)
{
	enum MHD_Result sent;
	struct child_answer a;
	json_t *doc = signed_body(r, "Invalid or expired NPU job signature", &sent);
	if (!doc)
		return sent;
	json_decref(doc);
	const char *args[] = { "--no-drain", "submit", "-", NULL };
	if (broker(args, r->body, r->len, &a) == 0)
		start_drainer();
	return answer(r, 201, &a);
}

static enum MHD_Result cancel(struct req *r, const char *id)
{
	struct child_answer a;
	if (r->too_large)
		return reply_error(r, 400, "Request body exceeds the %d byte limit", BODY_LIMIT);
	if (!auth_signature(&g_server.cfg, r))
		return reply_error(r, 401, "Invalid or expired NPU job cancel signature");
	/* The one endpoint that tolerates an empty body. */
	json_error_t err;
	json_t *doc = r->len ? json_loadb(r->body, r->len, 0, &err) : json_object();
	if (!doc)
		return reply_error(r, 400, "%s", err.text);
	const char *sid = json_string_value(json_object_get(doc, "sessionId"));
	char session[512];
	snprintf(session, sizeof(session), "%s", sid ? sid : "");
	json_decref(doc);
	if (!session[0])
		return reply_error(r, 400, "sessionId is required for NPU job cancel");
	const char *args[] = { "--session", session, "cancel", id, NULL };
	broker(args, NULL, 0, &a);
	return answer(r, 200, &a);
}

enum MHD_Result handle_npu(struct req *r, const char *what, const char *id)
{
	struct child_answer a;
	if (!strcmp(what, "workloads"))
		return reply_json(r, 200, json_incref(json_object_get(capability, "workloads")));
	if (!strcmp(what, "devices"))
		return devices(r);
	if (!strcmp(what, "submit"))
		return submit(r);
	if (!strcmp(what, "cancel"))
		return cancel(r, id);
	const char *session = session_query(r);
	if (!session)
		return reply_error(r, 400, "session_id is required for NPU job access");
	const char *args[] = { "--session", session, what, id, NULL };
	broker(args, NULL, 0, &a);
	return answer(r, 200, &a);
}
