/* metrics_listen.c — SBX_METRICS_LISTEN: GET /metrics alone on a listener
 * of its own, so a scraper can reach it where the API is not exposed.
 * The bearer is asked (SBX_METRICS_TOKEN's, else the runner token) unless
 * SBX_METRICS_AUTH=none; a few connections at a time, a head whole within
 * CONNECTION_IDLE_S, any body dropped. */
#include "metrics_listen.h"
#include "auth_checks.h"
#include "connections.h"
#include "head_deadline.h"
#include "metrics.h"
#include "metrics_text.h"
#include "server.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <string.h>

#define METRICS_CONNECTIONS_MAX 16
#define METRICS_CONNECTION_MEMORY (32u << 10)

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	(void)cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		head_watch_open(conn, socket_context);
	} else {
		head_watch_close(*socket_context);
		*socket_context = NULL;
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	static int seen; /* a marker: this request's head has been seen */
	(void)cls;
	(void)version;
	(void)upload;
	if (!*con_cls) {
		*con_cls = &seen;
		head_watch_mark(conn, false); /* the head is whole */
		return MHD_YES;
	}
	if (*upload_size) { /* nobody reads a body here */
		*upload_size = 0;
		return MHD_YES;
	}
	struct req r = { .conn = conn, .method = method, .path = url };
	if (strcmp(url, "/metrics") != 0)
		return reply_error(&r, 404, "Not found");
	if (strcmp(method, "GET") != 0)
		return reply_error(&r, 405, "Method not allowed");
	const struct config *c = &g_server.cfg;
	bool own = c->metrics_token_len > 0;
	if (!c->metrics_no_auth && !sbx_bearer_ok(header(&r, "authorization"), own ? c->metrics_token : c->token,
						 own ? c->metrics_token_len : c->token_len)) {
		metrics_refused(METRICS_REFUSED_UNAUTHORIZED);
		return reply_error(&r, 401, "Unauthorized");
	}
	return handle_metrics(&r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode code)
{
	(void)cls;
	(void)con_cls;
	(void)code;
	head_watch_mark(conn, true); /* keep-alive: the next head starts now */
}

struct MHD_Daemon *metrics_listen_start(int listen_fd)
{
	return MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, NULL,
				MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_CONNECTION_LIMIT,
				(unsigned int)METRICS_CONNECTIONS_MAX, MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned int)CONNECTION_IDLE_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)METRICS_CONNECTION_MEMORY, MHD_OPTION_END);
}
