/* conn.c — one client connection of the gateway: each request head read
 * within its time (--head-timeout-ms), the answer its admission asks for
 * (429 past a cap), the gateway's own refusals, and the loop over its
 * requests (serve.c serves each). */
#include "egress.h"
#include "http_head.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum head { HEAD_BAD = -1, HEAD_OK, HEAD_GONE, HEAD_LATE };

/* HEAD_OK with a head in c->buf; HEAD_GONE when the client left first;
 * HEAD_LATE when c->head ran out (c->len bytes of it came); HEAD_BAD
 * malformed (why). */
static enum head read_head(struct conn *c, struct sbx_http_head *h, char *why, size_t size)
{
	for (;;) {
		int rc = c->len ? sbx_http_parse_request(c->buf, c->len, h, why, size) : 1;
		if (rc <= 0)
			return rc == 0 ? HEAD_OK : HEAD_BAD;
		if (c->len >= SBX_HTTP_HEAD_MAX) {
			snprintf(why, size, "the request head is larger than 64 KiB");
			return HEAD_BAD;
		}
		if (sbx_relay_wait(c->client, POLLIN, &c->head) != 0)
			return errno == ETIMEDOUT ? HEAD_LATE : HEAD_GONE;
		ssize_t r = recv(c->client, c->buf + c->len, BUF_CAP - c->len, 0);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return HEAD_GONE;
		if (r > 0)
			c->len += (size_t)r;
	}
}

/* The time a connection has to send its next request head: from its
 * accept for the first (a refused one gets at most a second before its
 * 429), from the end of the exchange before for each later one. */
static void head_limits(struct conn *c, bool first)
{
	int ms = c->ad->refuse && c->g->head_timeout_ms > 1000 ? 1000 : c->g->head_timeout_ms;
	c->head.idle_ms = ms;
	c->head.deadline_ms = (first ? c->ad->accepted_ms : sbx_monotonic_ms()) + ms;
}

void conn_serve(struct conn *c, char *rbuf, char *out, bool first)
{
	struct gateway *g = c->g;
	struct admission *ad = c->ad;
	for (bool again = true; again; first = false) {
		struct sbx_http_head h;
		struct audit a;
		char why[200], reason[300];
		memset(&a, 0, sizeof(a));
		a.peer = ad->uid;
		a.peer_pid = ad->pid;
		a.started_ms = first ? ad->accepted_ms : sbx_monotonic_ms();
		a.intercepted = c->pinned != NULL;
		if (c->pinned)
			snprintf(a.host, sizeof(a.host), "%s", c->pinned->t.host);
		head_limits(c, first);
		enum head rc = read_head(c, &h, why, sizeof(why));
		peers_head_end(g, ad);
		if (rc == HEAD_OK)
			snprintf(a.method, sizeof(a.method), "%.*s", (int)(h.method_len < 23 ? h.method_len : 23), h.method);
		atomic_store(&g->last_activity_ms, sbx_monotonic_ms());
		if (ad->refuse) {
			/* Answered whether or not its head came, unless it left. */
			if (rc != HEAD_GONE)
				conn_refuse(c, &a, "busy", 429, ad->reason);
			break;
		}
		if (rc == HEAD_GONE || (rc == HEAD_LATE && !c->len))
			break;
		if (rc == HEAD_LATE) {
			snprintf(reason, sizeof(reason),
				 "Sandbox network access closed a request whose head did not arrive within %d ms",
				 g->head_timeout_ms);
			conn_refuse(c, &a, "timeout", 408, reason);
			break;
		}
		if (rc == HEAD_BAD) {
			snprintf(reason, sizeof(reason), "Sandbox network access refused a malformed request: %s", why);
			conn_refuse(c, &a, "malformed", 400, reason);
			break;
		}
		bool connect = h.method_len == 7 && !memcmp(h.method, "CONNECT", 7);
		if (connect && c->pinned) {
			conn_refuse(c, &a, "malformed", 400,
				    "Sandbox network access refused a CONNECT inside an intercepted TLS session");
			break;
		}
		if (connect) {
			serve_connect(c, &h, &a, rbuf, out);
			break;
		}
		again = c->pinned ? c->pinned->serve(c, &h, &a, rbuf, out) : serve_absolute(c, &h, &a, rbuf, out);
	}
}

void gateway_serve(struct gateway *g, int client, const char *sent, size_t sent_len, struct admission *ad)
{
	struct conn c = { .g = g, .client = client, .ad = ad };
	/* A refused connection needs only the buffer its head is read into. */
	char *rbuf = ad->refuse ? NULL : malloc(BUF_CAP), *out = ad->refuse ? NULL : malloc(OUT_CAP);
	c.buf = malloc(BUF_CAP);
	if (c.buf && sent_len && sent_len <= BUF_CAP) {
		memcpy(c.buf, sent, sent_len);
		c.len = sent_len;
	}
	if (c.buf && (ad->refuse || (rbuf && out)))
		conn_serve(&c, rbuf, out, true);
	free(c.buf);
	free(rbuf);
	free(out);
	close(client);
}
