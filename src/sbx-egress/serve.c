/* serve.c — one request of a client connection: decide (allowlist,
 * resolve, classify), then tunnel a CONNECT or forward an absolute-form
 * request with its Host rewritten and hop-by-hop fields gone. */
#include "egress.h"
#include "../lib/egress_addr.h"
#include "http_head.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static void consume(char *buf, size_t *len, size_t n)
{
	memmove(buf, buf + n, *len - n);
	*len -= n;
}

static socklen_t addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

/* Connects to the vetted addresses in turn (or to the proxy): the socket,
 * or -1 with the status to answer (502, or 504 when time ran out). */
static int connect_upstream(struct conn *c, const struct sbx_egress_decision *d, struct audit *a, int *status)
{
	struct gateway *g = c->g;
	int timed_out = 0;
	if (g->via_proxy) {
		int fd = upstream_connect(&g->proxy, &g->resolve, g->connect_timeout_ms);
		if (fd < 0)
			*status = errno == ETIMEDOUT ? 504 : 502;
		else
			snprintf(a->address, sizeof(a->address), "proxy");
		return fd;
	}
	long long stop = sbx_monotonic_ms() + g->connect_timeout_ms;
	for (int i = 0; i < d->n_vetted; i++) {
		long long left = stop - sbx_monotonic_ms();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		int fd = sbx_connect_within((const struct sockaddr *)&d->vetted[i], addr_len(&d->vetted[i]), (int)left);
		if (fd >= 0) {
			sbx_egress_addr_text(&d->vetted[i], a->address, sizeof(a->address));
			return fd;
		}
		timed_out = errno == ETIMEDOUT;
	}
	*status = timed_out ? 504 : 502;
	return -1;
}

static void refuse_upstream(struct conn *c, struct audit *a, int status, const struct sbx_egress_target *t)
{
	char reason[400];
	if (c->g->via_proxy)
		snprintf(reason, sizeof(reason),
			 "Sandbox network access could not reach %s:%d through this deployment's outbound route", t->host,
			 t->port);
	else if (status == 504)
		snprintf(reason, sizeof(reason), "Sandbox network access timed out connecting to %s:%d", t->host, t->port);
	else
		snprintf(reason, sizeof(reason), "Sandbox network access could not reach %s:%d", t->host, t->port);
	conn_refuse(c, a, "failed", status, reason);
}

/* The decision for an authority, or a refusal already sent (returns -1). */
static int decide(struct conn *c, const char *authority, int default_port, struct sbx_egress_target *t,
		  struct sbx_egress_decision *d, struct audit *a)
{
	char why[300], reason[700];
	int status = sbx_egress_parse_authority(authority, default_port, t, why, sizeof(why));
	snprintf(a->host, sizeof(a->host), "%s", status ? authority : t->host);
	a->port = status ? 0 : t->port;
	if (status) {
		snprintf(reason, sizeof(reason), "%.280s is %s", authority, why);
		conn_refuse(c, a, status == 400 ? "malformed" : "denied", status, reason);
		return -1;
	}
	sbx_egress_decide(&c->g->policy, t, overrides_resolve, &c->g->resolve, d);
	if (!d->allowed) {
		conn_refuse(c, a, "denied", 403, d->reason);
		return -1;
	}
	return 0;
}

void serve_connect(struct conn *c, const struct sbx_http_head *h, struct audit *a)
{
	struct gateway *g = c->g;
	struct sbx_egress_target t;
	struct sbx_egress_decision d;
	char authority[300];
	int status;

	snprintf(authority, sizeof(authority), "%.*s", (int)(h->target_len < 299 ? h->target_len : 299), h->target);
	if (h->target_len >= sizeof(authority)) {
		conn_refuse(c, a, "malformed", 400, "the CONNECT authority is longer than 253 bytes and a port");
		return;
	}
	if (decide(c, authority, 443, &t, &d, a) != 0)
		return;
	int up = connect_upstream(c, &d, a, &status);
	if (up < 0) {
		refuse_upstream(c, a, status, &t);
		return;
	}
	char extra[16384];
	size_t extra_len = 0;
	if (g->via_proxy &&
	    upstream_tunnel(up, &g->proxy, t.host, t.port, g->connect_timeout_ms, extra, sizeof(extra), &extra_len) != 0) {
		close(up);
		refuse_upstream(c, a, errno == ETIMEDOUT ? 504 : 502, &t);
		return;
	}
	static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
	struct sbx_relay_limits lim = { .idle_ms = g->idle_ms, .deadline_ms = sbx_monotonic_ms() + g->lifetime_ms };
	a->decision = "allowed";
	a->status = 200;
	snprintf(a->reason, sizeof(a->reason), "allowed");
	consume(c->buf, &c->len, h->length);
	/* Bytes the client sent behind the head (a TLS hello) go first. */
	if (sbx_relay_write_all(c->client, ok, sizeof(ok) - 1, &lim) == 0 &&
	    sbx_relay_write_all(c->client, extra, extra_len, &lim) == 0 &&
	    sbx_relay_write_all(up, c->buf, c->len, &lim) == 0) {
		a->up = c->len;
		a->down = extra_len;
		uint64_t up_bytes, down_bytes;
		if (sbx_relay_tunnel(c->client, up, &lim, &up_bytes, &down_bytes) != 0 && errno == ETIMEDOUT)
			snprintf(a->reason, sizeof(a->reason), "allowed; the tunnel ended at its idle or lifetime limit");
		a->up += up_bytes;
		a->down += down_bytes;
	}
	c->len = 0;
	close(up);
	audit_write(g, a);
}

/* Sends a body whose first *len bytes are already in buf, then the rest
 * from `from`; afterwards buf holds the bytes that followed the body. */
static int forward_body(int from, int to, char *buf, size_t *len, size_t cap, enum sbx_http_body kind,
			uint64_t length, const struct sbx_relay_limits *lim, uint64_t *moved)
{
	*moved = 0;
	if (kind == SBX_BODY_NONE)
		return 0;
	if (kind != SBX_BODY_CHUNKED) {
		uint64_t want = kind == SBX_BODY_LENGTH ? length : UINT64_MAX;
		size_t take = *len < want ? *len : (size_t)want;
		if (sbx_relay_write_all(to, buf, take, lim) != 0)
			return -1;
		consume(buf, len, take);
		*moved = take;
		if (want == take)
			return 0;
		uint64_t more;
		int rc = sbx_relay_copy(from, to, want == UINT64_MAX ? UINT64_MAX : want - take, lim, &more);
		*moved += more;
		return rc;
	}
	struct sbx_chunked ch;
	bool done = false;
	memset(&ch, 0, sizeof(ch));
	for (;;) {
		if (*len) {
			long n = sbx_chunked_scan(&ch, buf, *len, &done);
			if (n < 0) {
				errno = EPROTO;
				return -1;
			}
			if (sbx_relay_write_all(to, buf, (size_t)n, lim) != 0)
				return -1;
			consume(buf, len, (size_t)n);
			*moved += (uint64_t)n;
			if (done)
				return 0;
		}
		if (sbx_relay_wait(from, POLLIN, lim) != 0)
			return -1;
		ssize_t r = recv(from, buf + *len, cap - *len, 0);
		if (r == 0) {
			errno = EPIPE;
			return -1;
		}
		if (r < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (r > 0)
			*len += (size_t)r;
	}
}

/* Reads the upstream's response head into rbuf (1xx heads are relayed to
 * the client and skipped). 0, or -1. */
static int read_response(int up, int client, char *rbuf, size_t *rlen, struct sbx_http_head *r,
			 const struct sbx_relay_limits *lim)
{
	char why[200];
	for (;;) {
		int rc = *rlen ? sbx_http_parse_response(rbuf, *rlen, r, why, sizeof(why)) : 1;
		if (rc < 0 || (rc == 1 && *rlen >= SBX_HTTP_HEAD_MAX)) {
			errno = EPROTO;
			return -1;
		}
		if (rc == 0 && r->status >= 100 && r->status < 200) {
			if (r->status == 101) {
				errno = EPROTO;
				return -1;
			}
			if (sbx_relay_write_all(client, rbuf, r->length, lim) != 0)
				return -1;
			consume(rbuf, rlen, r->length);
			continue;
		}
		if (rc == 0)
			return 0;
		if (sbx_relay_wait(up, POLLIN, lim) != 0)
			return -1;
		ssize_t got = recv(up, rbuf + *rlen, BUF_CAP - *rlen, 0);
		if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
			errno = got == 0 ? ECONNRESET : errno;
			return -1;
		}
		if (got > 0)
			*rlen += (size_t)got;
	}
}

/* Splits an absolute-form target into its authority and path; the status
 * to refuse with otherwise. */
static int split_target(const struct sbx_http_head *h, char *authority, size_t asize, char *path, size_t psize,
			char *reason, size_t rsize)
{
	const char *tg = h->target, *end = h->target + h->target_len;
	const char *scheme_end = memmem(tg, h->target_len, "://", 3);
	if (!scheme_end || tg[0] == '/') {
		snprintf(reason, rsize, "Sandbox network access expects absolute-form proxy requests");
		return 400;
	}
	if ((size_t)(scheme_end - tg) != 4 || strncasecmp(tg, "http", 4) != 0) {
		snprintf(reason, rsize, "Sandbox network access cannot forward %.*s: without CONNECT",
			 (int)(scheme_end - tg < 16 ? scheme_end - tg : 16), tg);
		return 400;
	}
	const char *a = scheme_end + 3;
	size_t alen = strcspn(a, "/?#"), rest = (size_t)(end - a);
	alen = alen < rest ? alen : rest;
	const char *p = a + alen;
	if (memchr(a, '#', rest) || (size_t)(p - a) >= asize || (size_t)(end - p) + 2 >= psize) {
		snprintf(reason, rsize, "the request target has a fragment or is too long");
		return 400;
	}
	snprintf(authority, asize, "%.*s", (int)(p - a), a);
	snprintf(path, psize, "%s%.*s", p == end || *p == '?' ? "/" : "", (int)(end - p), p);
	return 0;
}

/* One absolute-form request; true when the connection may carry another. */
bool serve_absolute(struct conn *c, const struct sbx_http_head *h, struct audit *a, char *rbuf, char *out)
{
	struct gateway *g = c->g;
	char authority[300], path[SBX_HTTP_HEAD_MAX], reason[400], why[200];
	struct sbx_egress_target t;
	struct sbx_egress_decision d;
	enum sbx_http_body req_kind, resp_kind;
	uint64_t req_length = 0, resp_length = 0, moved;
	size_t n, rlen = 0;
	int status;

	if ((status = split_target(h, authority, sizeof(authority), path, sizeof(path), reason, sizeof(reason)))) {
		snprintf(a->host, sizeof(a->host), "%.*s", (int)(h->target_len < 200 ? h->target_len : 200), h->target);
		conn_refuse(c, a, "malformed", status, reason);
		return false;
	}
	if (sbx_http_request_body(h, &req_kind, &req_length, why, sizeof(why)) != 0) {
		snprintf(a->host, sizeof(a->host), "%s", authority);
		snprintf(reason, sizeof(reason), "Sandbox network access refused the request: %s", why);
		conn_refuse(c, a, "malformed", 400, reason);
		return false;
	}
	if (decide(c, authority, 80, &t, &d, a) != 0)
		return false;
	bool keep_alive = sbx_http_keep_alive(h), head_request = h->method_len == 4 && !memcmp(h->method, "HEAD", 4);
	bool client_10 = h->minor == 0;
	if (sbx_http_forward_request(h, t.host, t.port, path, g->via_proxy, g->via_proxy ? g->proxy.authorization : NULL,
				     out, OUT_CAP, &n) != 0) {
		conn_refuse(c, a, "malformed", 400, "Sandbox network access refused the request: its head is too large");
		return false;
	}
	bool expect = sbx_http_has_token(h, "Expect", "100-continue");
	int up = connect_upstream(c, &d, a, &status);
	if (up < 0) {
		refuse_upstream(c, a, status, &t);
		return false;
	}
	struct sbx_relay_limits lim = { .idle_ms = g->idle_ms, .deadline_ms = sbx_monotonic_ms() + g->lifetime_ms };
	consume(c->buf, &c->len, h->length);
	a->decision = "allowed";
	snprintf(a->reason, sizeof(a->reason), "allowed");
	static const char go_on[] = "HTTP/1.1 100 Continue\r\n\r\n";
	bool ok = sbx_relay_write_all(up, out, n, &lim) == 0 &&
		  (!expect || req_kind == SBX_BODY_NONE || sbx_relay_write_all(c->client, go_on, sizeof(go_on) - 1, &lim) == 0) &&
		  forward_body(c->client, up, c->buf, &c->len, BUF_CAP, req_kind, req_length, &lim, &moved) == 0;
	a->up = ok ? moved : 0;
	struct sbx_http_head r;
	if (!ok || read_response(up, c->client, rbuf, &rlen, &r, &lim) != 0 ||
	    sbx_http_response_body(&r, head_request, &resp_kind, &resp_length) != 0) {
		close(up);
		refuse_upstream(c, a, errno == ETIMEDOUT ? 504 : 502, &t);
		return false;
	}
	keep_alive = keep_alive && resp_kind != SBX_BODY_UNTIL_CLOSE;
	a->status = r.status;
	if (sbx_http_forward_response(&r, keep_alive, client_10, out, OUT_CAP, &n) != 0) {
		close(up);
		refuse_upstream(c, a, 502, &t);
		return false;
	}
	consume(rbuf, &rlen, r.length);
	ok = sbx_relay_write_all(c->client, out, n, &lim) == 0 &&
	     forward_body(up, c->client, rbuf, &rlen, BUF_CAP, resp_kind, resp_length, &lim, &moved) == 0;
	a->down = ok ? moved : 0;
	if (!ok)
		snprintf(a->reason, sizeof(a->reason), "allowed; the response was cut short");
	close(up);
	audit_write(g, a);
	return ok && keep_alive;
}
