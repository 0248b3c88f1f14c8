/* refuse.c — the gateway's refusal of one request: a plain-text answer
 * with the reason in X-Sandbox-Network, the audit line, then a close that
 * lets the client read it. */
#include "egress.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static const char *status_text(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 408: return "Request Timeout";
	case 429: return "Too Many Requests";
	case 502: return "Bad Gateway";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

/* Printable ASCII only: a reason goes into a header and a body. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
}

/* Sends the refusal, logs it, and closes after discarding whatever the
 * client pipelined behind the request (for a moment, so the client reads
 * the answer instead of a reset). */
void conn_refuse(struct conn *c, struct audit *a, const char *decision, int status, const char *reason)
{
	char out[1400];
	snprintf(a->reason, sizeof(a->reason), "%s", reason);
	sanitize(a->reason);
	a->decision = decision;
	a->status = status;
	int n = snprintf(out, sizeof(out),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
			 "X-Sandbox-Network: %s\r\nConnection: close\r\n\r\n%s\n",
			 status, status_text(status), strlen(a->reason) + 1, a->reason, a->reason);
	struct sbx_relay_limits quick = { .idle_ms = 1000, .deadline_ms = sbx_monotonic_ms() + 2000 };
	if (n > 0 && n < (int)sizeof(out))
		(void)sbx_relay_write_all(c->client, out, (size_t)n, &quick);
	peers_refused(c->g, c->ad, a);
	shutdown(c->client, SHUT_WR);
	char sink[4096];
	size_t drained = 0;
	while (drained < (1u << 20) && sbx_relay_wait(c->client, POLLIN, &quick) == 0) {
		ssize_t r = recv(c->client, sink, sizeof(sink), 0);
		if (r <= 0 && !(r < 0 && errno == EINTR))
			break;
		drained += r > 0 ? (size_t)r : 0;
	}
}
