/* intercept.c — a CONNECT to a host a secret of the run is bound to: the
 * gateway verifies the real host over its own TLS session to the vetted
 * address, ends the client's TLS with a leaf of the run's CA, and serves
 * the requests in between with the secret in place of its placeholder. */
#include "egress.h"
#include "mint.h"
#include "secrets.h"
#include "tls_pump.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A TLS session on fd (its SNI and verified name host, or the server
 * side when host is NULL), its handshake within lim, handed to a pump: the
 * plain end, or -1 with why (ssl and fd then gone). */
static int session(struct gateway *g, SSL *ssl, int fd, const char *host, const struct sbx_relay_limits *lim,
		   char *why, size_t size)
{
	/* Both sockets already have TCP_NODELAY (relay.c, the handover): TLS
	 * records go out as the pump makes them. */
	bool ok = ssl && SSL_set_fd(ssl, fd) == 1 &&
		  (!host || (SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1));
	snprintf(why, size, "no TLS session");
	if (ok) {
		if (host)
			SSL_set_connect_state(ssl);
		else
			SSL_set_accept_state(ssl);
		ok = tls_handshake(ssl, fd, lim, why, size) == 0;
	}
	struct sbx_relay_limits life = { .idle_ms = g->idle_ms, .deadline_ms = sbx_monotonic_ms() + g->lifetime_ms };
	int plain = ok ? tls_pump_start(ssl, fd, &life) : -1;
	if (plain < 0) {
		if (ok)
			snprintf(why, size, "out of resources");
		SSL_free(ssl);
		close(fd);
	}
	return plain;
}

/* The gateway's own session to the host: verified against the trust store
 * with the host's name; the plain end of its pump, or -1 (refusal sent). */
static int open_upstream(struct conn *c, struct pinned *p, struct audit *a)
{
	struct gateway *g = c->g;
	char extra[64], why[300], reason[600];
	size_t extra_len;
	int up = serve_open_upstream(c, &p->d, &p->t, a, extra, sizeof(extra), &extra_len);
	if (up < 0)
		return -1;
	struct sbx_relay_limits lim = { .idle_ms = g->connect_timeout_ms,
					.deadline_ms = sbx_monotonic_ms() + g->connect_timeout_ms };
	int plain = extra_len ? -1 : session(g, SSL_new(g->secrets->upstream), up, p->t.host, &lim, why, sizeof(why));
	if (extra_len) {
		close(up);
		snprintf(why, sizeof(why), "the upstream proxy sent bytes before the handshake");
	}
	if (plain < 0) {
		snprintf(reason, sizeof(reason), "Sandbox network access could not open a verified TLS session to %s:%d: %s",
			 p->t.host, p->t.port, why);
		conn_refuse(c, a, "failed", 502, reason);
	}
	return plain;
}

/* The client's side: answered 200, then a TLS session with the leaf the
 * run's CA signs for the host. The plain end of its pump, or -1. */
static int accept_client(struct conn *c, const struct pinned *p, struct audit *a)
{
	struct gateway *g = c->g;
	char why[300];
	static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
	struct sbx_relay_limits lim = { .idle_ms = g->head_timeout_ms,
					.deadline_ms = sbx_monotonic_ms() + g->head_timeout_ms };
	SSL_CTX *ctx = mint_server_ctx(g->secrets->mint, p->t.host);
	if (!ctx) {
		conn_refuse(c, a, "failed", 502, "Sandbox network access cannot intercept more hosts in this run");
		return -1;
	}
	if (c->len) {
		/* The hello must follow the 200: bytes before it are not TLS the
		 * gateway could answer as the host. */
		conn_refuse(c, a, "malformed", 400,
			    "Sandbox network access expects the TLS handshake after the CONNECT answer");
		return -1;
	}
	if (sbx_relay_write_all(c->client, ok, sizeof(ok) - 1, &lim) != 0)
		return -1;
	int fd = dup(c->client);
	int plain = fd >= 0 ? session(g, SSL_new(ctx), fd, NULL, &lim, why, sizeof(why)) : -1;
	if (plain < 0) {
		a->decision = "failed";
		a->status = 200;
		snprintf(a->reason, sizeof(a->reason), "the client's TLS handshake with the run's certificate failed: %s",
			 fd >= 0 ? why : strerror(errno));
		audit_write(g, a);
	}
	return plain;
}

void intercept_session(struct conn *c, const struct sbx_egress_target *t, const struct sbx_egress_decision *d,
		       struct audit *a, char *rbuf, char *out)
{
	struct gateway *g = c->g;
	struct pinned p = { .t = *t, .d = *d, .up = -1, .serve = serve_pinned };
	if ((p.up = open_upstream(c, &p, a)) < 0)
		return;
	int client = accept_client(c, &p, a);
	if (client < 0) {
		close(p.up);
		return;
	}
	a->decision = "allowed";
	a->status = 200;
	a->intercepted = true;
	snprintf(a->reason, sizeof(a->reason), "allowed; intercepted: a secret of this run is bound to %s", t->host);
	audit_write(g, a);
	struct conn inner = { .g = g, .client = client, .buf = c->buf, .ad = c->ad, .pinned = &p };
	conn_serve(&inner, rbuf, out, false);
	/* The heads held values: nothing of them stays in the buffers. */
	OPENSSL_cleanse(out, OUT_CAP);
	OPENSSL_cleanse(c->buf, BUF_CAP);
	c->len = 0;
	if (p.up >= 0)
		close(p.up);
	close(client);
}

bool serve_pinned(struct conn *c, const struct sbx_http_head *h, struct audit *a, char *rbuf, char *out)
{
	struct gateway *g = c->g;
	struct pinned *p = c->pinned;
	struct exchange x = { .t = &p->t, .mask = true };
	char path[SBX_HTTP_HEAD_MAX], why[200], reason[400];
	size_t n;
	a->port = p->t.port;
	if (!h->target_len || h->target[0] != '/' || h->target_len >= sizeof(path)) {
		conn_refuse(c, a, "malformed", 400,
			    "Sandbox network access expects origin-form requests (/path) inside an intercepted session");
		return false;
	}
	snprintf(path, sizeof(path), "%.*s", (int)h->target_len, h->target);
	if (sbx_http_request_body(h, &x.req_kind, &x.req_length, why, sizeof(why)) != 0) {
		snprintf(reason, sizeof(reason), "Sandbox network access refused the request: %s", why);
		conn_refuse(c, a, "malformed", 400, reason);
		return false;
	}
	x.expect = sbx_http_has_token(h, "Expect", "100-continue");
	if (!serve_screen(c, h, x.req_kind, x.req_length, &x.expect, p->t.host, p->t.port, a))
		return false;
	x.keep_alive = sbx_http_keep_alive(h);
	x.head_request = h->method_len == 4 && !memcmp(h->method, "HEAD", 4);
	x.client_10 = h->minor == 0;
	if (sbx_http_forward_request(h, p->t.host, p->t.port, path, false, NULL, true, out, OUT_CAP, &n) != 0 ||
	    gw_secrets_inject(g->secrets, p->t.host, p->t.port, out, &n, OUT_CAP) != 0) {
		conn_refuse(c, a, "malformed", 400, "Sandbox network access refused the request: its head is too large");
		return false;
	}
	if (p->up < 0 && (p->up = open_upstream(c, p, a)) < 0)
		return false;
	buf_consume(c->buf, &c->len, h->length);
	bool again = serve_exchange(c, p->up, &x, a, rbuf, out, n);
	if (!x.up_again) {
		close(p->up);
		p->up = -1;
	}
	return again;
}
