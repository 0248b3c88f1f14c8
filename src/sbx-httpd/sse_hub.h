/* sse_hub.h — the event streams open now: at most SBX_SSE_MAX_CLIENTS,
 * each suspended while it has nothing to send and resumed when its
 * execution stores something, when a keep-alive is due or when its
 * lifetime ends. */
#ifndef SBX_HTTPD_SSE_HUB_H
#define SBX_HTTPD_SSE_HUB_H

#include <microhttpd.h>
#include <stdbool.h>

struct sse_watch {
	char id[161];                /* the execution it follows */
	struct MHD_Connection *conn;
	long long started_ms;        /* monotonic */
	long long last_sent_ms;      /* written by its reader before it suspends */
	bool suspended;              /* by its reader; only the hub resumes it */
	bool pending;                /* something was stored since its last read */
	struct sse_watch *next;
};

/* Takes a place (false: the cap is reached); w->id and w->conn set. */
bool sse_hub_join(struct sse_watch *w);
void sse_hub_leave(struct sse_watch *w);
/* Before a read: what is stored from now on resumes it. */
void sse_hub_arm(struct sse_watch *w);
/* From its reader, with nothing to send: suspends the connection and
 * returns true, or false when something was stored meanwhile (read again). */
bool sse_hub_suspend(struct sse_watch *w);
/* Execution id stored something: its streams read again. */
void sse_hub_notify(const char *id);

#endif
