/* connections.c — the daemon's clients: two poll threads read every head
 * and body; a request that may wait (an execution, a stage) is answered on
 * its own thread while its connection is suspended. Caps on connections,
 * requests in flight, body pace and dropped bytes bound what clients cost. */
#include "connections.h"
#include "server.h"
#include "reply.h"
#include "body.h"
#include "upload.h"
#include "auth.h"
#include "head_deadline.h"
#include "metrics.h"
#include "route.h"
#include "../lib/clock.h"
#include "runner.h"

#include <pthread.h>
#include <stdbool.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <openssl/crypto.h>
#include <string.h>

/* Each connection's buffer: uploads arrive in pieces this size (the 32 KiB
 * default costs a streamed upload half its speed in calls). The pool is
 * mapped, so an idle connection costs only the pages its head touched. */
#define CONNECTION_MEMORY (256u << 10)

/* Poll threads: they only move bytes and never wait on anything. poll,
 * not epoll: libmicrohttpd 0.9.75's edge-triggered epoll misses the FIN
 * of a client that closes right after a partial request, and holds that
 * connection until its idle timeout (80 such clients kept a 48-fd daemon
 * unreachable for minutes); level-triggered poll sees it at once. */
#define IO_THREADS 2

/* Connections past max_connections still get their 503: up to a quarter
 * more, at most 64. */
static unsigned refusal_reserve(void)
{
	long long quarter = g_server.cfg.max_connections / 4 + 1;
	return (unsigned)(quarter < 64 ? quarter : 64);
}

/* A body still arriving after this long must average BODY_MIN_RATE bytes/s. */
#define BODY_GRACE_MS 30000
#define BODY_MIN_RATE 4096

/* Bytes read and dropped (a 401, an over-limit body) before the connection
 * is closed instead: the answer is known, the rest is not worth reading. */
#define DROP_LIMIT (16u << 20)

/* A request's thread: what its handlers keep on the stack is small. */
#define REQUEST_STACK (1u << 20)

enum phase { READING, ANSWERING, ANSWERED };

struct conn_state {
	char *path;                  /* the path as sent, still percent-encoded (upstream routes on it) */
	bool fresh;                  /* on_request has not seen this request yet */
	char *body;
	size_t len, cap;
	bool too_large;
	bool unauthorized;           /* no valid bearer in the head: the body is dropped unread */
	bool discard;                /* a body nobody reads (/health, a refusal): dropped as it comes */
	bool refused;                /* answered from the head (503): nothing more to say */
	struct upload *upload;       /* a streamed PUT: the body goes to disk */
	long long body_started_ms;   /* 0: no body byte yet */
	unsigned long long received, dropped;
	enum phase phase;
	struct MHD_Connection *conn;
	struct req r;                /* the request its thread answers */
	struct reply_slot slot;
	enum MHD_Result result;
};

static atomic_long open_connections;
static atomic_long requests_in_flight;

static long connections_open(void)
{
	return atomic_load(&open_connections);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	(void)cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		atomic_fetch_add(&open_connections, 1);
		metrics_add(METRICS_CONNECTIONS, 1);
		metrics_gauge_add(METRICS_CONNECTIONS_OPEN, 1);
		head_watch_open(conn, socket_context);
	} else {
		head_watch_close(*socket_context);
		*socket_context = NULL;
		atomic_fetch_sub(&open_connections, 1);
		metrics_gauge_add(METRICS_CONNECTIONS_OPEN, -1);
	}
}

static enum MHD_Result refuse(struct MHD_Connection *conn, const char *method, const char *url, unsigned status,
			      const char *message, long long cap, const char *variable)
{
	struct req r = { .conn = conn, .method = method, .path = url };
	if (!variable)
		return reply_error(&r, status, "%s", message);
	return reply_error(&r, status, "%s (%lld, %s); retry later", message, cap, variable);
}

/* Keeps n body bytes, or counts them as dropped; false: close the connection. */
static bool take_body(struct conn_state *st, const char *method, const char *url, const char *data, size_t n)
{
	long long now = sbx_mono_ms();
	if (!st->body_started_ms)
		st->body_started_ms = now;
	st->received += n;
	long long elapsed = now - st->body_started_ms;
	if (elapsed > BODY_GRACE_MS && st->received < (unsigned long long)(elapsed / 1000) * BODY_MIN_RATE) {
		metrics_refused(METRICS_REFUSED_SLOW_BODY);
		return false; /* a trickle: it would hold the connection for ever */
	}
	if (st->discard || st->too_large || (st->upload && st->upload->over))
		return (st->dropped += n) <= DROP_LIMIT;
	if (st->upload) {
		upload_write(st->upload, data, n);
		return true;
	}
	if (st->len + n > body_limit(method, url)) {
		st->too_large = true; /* read on and drop: the answer is a 400 */
		st->dropped = n;
		return true;
	}
	if (st->len + n + 1 > st->cap) {
		size_t cap = st->cap ? st->cap : 4096;
		while (cap < st->len + n + 1)
			cap *= 2;
		char *grown = malloc(cap);
		if (!grown)
			return false;
		if (st->body) {
			memcpy(grown, st->body, st->len);
			/* What the old buffer held (a secret's value) is not left behind. */
			OPENSSL_cleanse(st->body, st->cap);
			free(st->body);
		}
		st->body = grown;
		st->cap = cap;
	}
	memcpy(st->body + st->len, data, n);
	st->len += n;
	st->body[st->len] = '\0';
	return true;
}

static void *answer(void *arg)
{
	struct conn_state *st = arg;
	char run[sizeof(st->r.run_done)];
	st->result = route(&st->r);
	memcpy(run, st->r.run_done, sizeof(run));
	int run_pid = st->r.run_done_pid;
	bool run_reaped = st->r.run_done_reaped;
	atomic_fetch_sub(&requests_in_flight, 1);
	metrics_gauge_add(METRICS_REQUESTS_IN_FLIGHT, -1);
	st->phase = ANSWERED;
	/* The last touch: once resumed, the connection (and st) may go. */
	MHD_resume_connection(st->conn);
	/* What the answer does not wait for: the run's directory, a new standby. */
	if (run[0])
		runner_let_go(run, run_pid, run_reaped);
	return NULL;
}

/* Suspends the connection and answers it on a thread of its own. */
static enum MHD_Result dispatch(struct conn_state *st, struct MHD_Connection *conn, const char *method, const char *url)
{
	if (atomic_fetch_add(&requests_in_flight, 1) >= g_server.cfg.max_requests) {
		atomic_fetch_sub(&requests_in_flight, 1);
		metrics_refused(METRICS_REFUSED_MAX_REQUESTS);
		return refuse(conn, method, url, 503, "The runner is answering as many requests as it allows",
			      g_server.cfg.max_requests, "SCIENCE_AGENT_MAX_REQUESTS");
	}
	st->r = (struct req){ .conn = conn, .method = method, .path = url, .body = st->body, .len = st->len,
			      .too_large = st->too_large, .upload = st->upload, .slot = &st->slot };
	metrics_gauge_add(METRICS_REQUESTS_IN_FLIGHT, 1);
	st->conn = conn;
	st->phase = ANSWERING;
	MHD_suspend_connection(conn);
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, REQUEST_STACK);
	int rc = pthread_create(&t, &attr, answer, st);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		atomic_fetch_sub(&requests_in_flight, 1);
		metrics_gauge_add(METRICS_REQUESTS_IN_FLIGHT, -1);
		metrics_refused(METRICS_REFUSED_NO_THREAD);
		st->phase = READING;
		MHD_resume_connection(conn);
		return refuse(conn, method, url, 503, "The runner could not start a thread for this request; retry later",
			      0, NULL);
	}
	return MHD_YES;
}

/* Every request's state, made from its raw URI before MHD decodes it:
 * routes match the encoded path and decode their parameters themselves. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	(void)conn;
	struct conn_state *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	size_t n = uri ? strcspn(uri, "?#") : 0;
	if (!(st->path = strndup(uri ? uri : "", n))) {
		free(st);
		return NULL;
	}
	st->fresh = true;
	return st;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *decoded_url,
				  const char *method, const char *version, const char *upload, size_t *upload_size,
				  void **con_cls)
{
	(void)cls;
	(void)version;
	(void)decoded_url;
	struct conn_state *st = *con_cls;
	if (!st)
		return MHD_NO; /* no memory for its state */
	const char *url = st->path;
	bool health = strcmp(method, "GET") == 0 && strcmp(url, "/health") == 0;
	if (st->fresh) {
		st->fresh = false;
		head_watch_mark(conn, false); /* the head is whole */
		if (connections_open() > g_server.cfg.max_connections) {
			st->discard = st->refused = true; /* nothing of the body is kept */
			metrics_refused(METRICS_REFUSED_MAX_CONNECTIONS);
			return refuse(conn, method, url, 503, "The runner has as many connections open as it allows",
				      g_server.cfg.max_connections, "SCIENCE_AGENT_MAX_CONNECTIONS");
		}
		/* The bearer is checked from the head, before a byte of the body is
		 * kept: an unauthenticated client costs no buffer and no upload. */
		struct req head = { .conn = conn, .method = method, .path = url };
		if (health) {
			st->discard = true; /* /health reads no body: none is kept */
			return MHD_YES;
		}
		if (!auth_bearer(&g_server.cfg, &head)) {
			st->unauthorized = st->discard = true;
			metrics_refused(METRICS_REFUSED_UNAUTHORIZED);
			return MHD_YES;
		}
		if (upload_wanted(method, url) && !(st->upload = upload_begin(conn, url)))
			return MHD_NO;
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		return take_body(st, method, url, upload, n) ? MHD_YES : MHD_NO;
	}
	if (st->phase == ANSWERED) {
		if (!st->slot.resp)
			return MHD_NO; /* nobody to answer, or no memory: the connection is closed */
		enum MHD_Result rc = MHD_queue_response(conn, st->slot.status, st->slot.resp);
		MHD_destroy_response(st->slot.resp);
		st->slot.resp = NULL;
		return rc == MHD_YES ? st->result : MHD_NO;
	}
	if (st->refused)
		return MHD_YES;
	if (st->unauthorized)
		return refuse(conn, method, url, 401, "Unauthorized", 0, NULL);
	if (health) { /* answered here: it reads two small runner-owned files */
		struct req r = { .conn = conn, .method = method, .path = url };
		return route(&r);
	}
	return dispatch(st, conn, method, url);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode code)
{
	(void)cls;
	(void)code;
	head_watch_mark(conn, true); /* keep-alive: the next head starts now */
	struct conn_state *st = *con_cls;
	if (st) {
		if (st->slot.resp)
			MHD_destroy_response(st->slot.resp);
		/* A secret's value may have arrived in this body: not left in freed memory. */
		if (st->body)
			OPENSSL_cleanse(st->body, st->cap);
		free(st->body);
		free(st->path);
		upload_free(st->upload);
		free(st);
		*con_cls = NULL;
	}
}

struct MHD_Daemon *server_start(int listen_fd)
{
	return MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL,
				NULL, on_request, NULL, MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_THREAD_POOL_SIZE,
				(unsigned int)IO_THREADS, MHD_OPTION_CONNECTION_LIMIT,
				(unsigned int)g_server.cfg.max_connections + refusal_reserve(),
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL, MHD_OPTION_NOTIFY_COMPLETED,
				on_completed, NULL, MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONNECTION_IDLE_S,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY, MHD_OPTION_END);
}

unsigned connections_needed_fds(void)
{
	return (unsigned)g_server.cfg.max_connections + refusal_reserve();
}
