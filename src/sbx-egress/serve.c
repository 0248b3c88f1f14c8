/* serve.c — one request of a client connection: decide (allowlist,
 * resolve, classify), then tunnel a CONNECT or forward an absolute-form
 * request with its Host rewritten and hop-by-hop fields gone. */
#include "egress.h"
#include "../lib/egress_addr.h"
#include "http_head.h"
#include "secrets.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void buf_consume(char *buf, size_t *len, size_t n)
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
		a->cause = status == 403 ? "ip-literal" : NULL;
		snprintf(reason, sizeof(reason), "%.280s is %s", authority, why);
		conn_refuse(c, a, status == 400 ? "malformed" : "denied", status, reason);
		return -1;
	}
	sbx_egress_decide(&c->g->policy, t, overrides_resolve, &c->g->resolve, d);
	if (!d->allowed) {
		a->cause = d->cause;
		conn_refuse(c, a, "denied", 403, d->reason);
		return -1;
	}
	return 0;
}

int serve_open_upstream(struct conn *c, const struct sbx_egress_decision *d, const struct sbx_egress_target *t,
			struct audit *a, char *extra, size_t extra_size, size_t *extra_len)
{
	struct gateway *g = c->g;
	int status;
	int up = connect_upstream(c, d, a, &status);
	*extra_len = 0;
	if (up < 0) {
		refuse_upstream(c, a, status, t);
		return -1;
	}
	if (g->via_proxy &&
	    upstream_tunnel(up, &g->proxy, t->host, t->port, g->connect_timeout_ms, extra, extra_size, extra_len) != 0) {
		close(up);
		refuse_upstream(c, a, errno == ETIMEDOUT ? 504 : 502, t);
		return -1;
	}
	return up;
}

/* A placeholder found where it may not go: refused, naming its secret. */
static bool refuse_misplaced(struct conn *c, const struct gw_secret *x, bool form, bool over_tls, struct audit *a)
{
	char reason[600];
	gw_secrets_refusal(x, form, over_tls, reason, sizeof(reason));
	snprintf(a->secret, sizeof(a->secret), "%s", x->s.name);
	conn_refuse(c, a, "denied", 403, reason);
	return false;
}

void serve_connect(struct conn *c, const struct sbx_http_head *h, struct audit *a, char *rbuf, char *out)
{
	struct gateway *g = c->g;
	struct sbx_egress_target t;
	struct sbx_egress_decision d;
	char authority[300];
	const struct gw_secret *x;

	snprintf(authority, sizeof(authority), "%.*s", (int)(h->target_len < 299 ? h->target_len : 299), h->target);
	if (h->target_len >= sizeof(authority)) {
		conn_refuse(c, a, "malformed", 400, "the CONNECT authority is longer than 253 bytes and a port");
		return;
	}
	/* A CONNECT head goes to the gateway alone: no placeholder has a use
	 * in it, and one in the name would reach a resolver. */
	bool form;
	if ((x = gw_secrets_misplaced(g->secrets, c->buf, h->length, true, NULL, 0, &form))) {
		snprintf(a->host, sizeof(a->host), "%s", authority);
		refuse_misplaced(c, x, form, false, a);
		return;
	}
	if (decide(c, authority, 443, &t, &d, a) != 0)
		return;
	if (g->intercept && gw_secrets_bound(g->secrets, t.host, t.port)) {
		buf_consume(c->buf, &c->len, h->length);
		g->intercept(c, &t, &d, a, rbuf, out);
		return;
	}
	char extra[16384];
	size_t extra_len = 0;
	int up = serve_open_upstream(c, &d, &t, a, extra, sizeof(extra), &extra_len);
	if (up < 0)
		return;
	static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
	struct sbx_relay_limits lim = { .idle_ms = g->idle_ms, .deadline_ms = sbx_monotonic_ms() + g->lifetime_ms };
	a->decision = "allowed";
	a->status = 200;
	snprintf(a->reason, sizeof(a->reason), "allowed");
	buf_consume(c->buf, &c->len, h->length);
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
		buf_consume(buf, len, take);
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
			buf_consume(buf, len, (size_t)n);
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
 * the client, masked like the final head when x->mask, through scratch of
 * OUT_CAP bytes, and skipped). 0, or -1. */
static int read_response(int up, int client, char *rbuf, size_t *rlen, struct sbx_http_head *r,
			 const struct sbx_relay_limits *lim, const struct gateway *g, const struct exchange *x,
			 char *scratch)
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
			const char *head = rbuf;
			size_t n = r->length;
			if (x->mask) {
				/* An interim head echoes fields as a final one may. */
				memcpy(scratch, rbuf, n);
				gw_secrets_mask(g->secrets, x->t->host, x->t->port, scratch, &n, OUT_CAP);
				head = scratch;
			}
			if (sbx_relay_write_all(client, head, n, lim) != 0)
				return -1;
			buf_consume(rbuf, rlen, r->length);
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

/* Whether the chunked body at p (len bytes) ends within them. */
static bool chunked_ends(const char *p, size_t len)
{
	struct sbx_chunked ch;
	bool done = false;
	memset(&ch, 0, sizeof(ch));
	return sbx_chunked_scan(&ch, p, len, &done) >= 0 && done;
}

#define SCREEN_BODY 8192

bool serve_screen(struct conn *c, const struct sbx_http_head *h, enum sbx_http_body kind, uint64_t length,
		  bool *expect, const char *host, int port, struct audit *a)
{
	struct gateway *g = c->g;
	if (!g->secrets)
		return true;
	size_t want = h->length + (kind == SBX_BODY_NONE ? 0 : kind == SBX_BODY_LENGTH && length < SCREEN_BODY ? (size_t)length : SCREEN_BODY);
	struct sbx_relay_limits lim = { .idle_ms = g->head_timeout_ms, .deadline_ms = sbx_monotonic_ms() + g->head_timeout_ms };
	static const char go_on[] = "HTTP/1.1 100 Continue\r\n\r\n";
	if (*expect && kind != SBX_BODY_NONE && sbx_relay_write_all(c->client, go_on, sizeof(go_on) - 1, &lim) != 0)
		return false;
	*expect = false;
	while (c->len < want && !(kind == SBX_BODY_CHUNKED && chunked_ends(c->buf + h->length, c->len - h->length))) {
		if (sbx_relay_wait(c->client, POLLIN, &lim) != 0) {
			if (errno == ETIMEDOUT)
				conn_refuse(c, a, "timeout", 408,
					    "Sandbox network access closed a request whose body did not start within the head time");
			return false;
		}
		ssize_t r = recv(c->client, c->buf + c->len, BUF_CAP - c->len, 0);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return false;
		if (r > 0)
			c->len += (size_t)r;
	}
	size_t body = c->len - h->length < want - h->length ? c->len - h->length : want - h->length;
	bool form;
	const struct gw_secret *x = gw_secrets_misplaced(g->secrets, c->buf, h->length, true, host, port, &form);
	if (!x)
		x = gw_secrets_misplaced(g->secrets, c->buf + h->length, body, false, host, port, &form);
	return x ? refuse_misplaced(c, x, form, host != NULL, a) : true;
}

bool serve_exchange(struct conn *c, int up, struct exchange *x, struct audit *a, char *rbuf, char *out, size_t n)
{
	struct gateway *g = c->g;
	struct sbx_relay_limits lim = { .idle_ms = g->idle_ms, .deadline_ms = sbx_monotonic_ms() + g->lifetime_ms };
	enum sbx_http_body resp_kind;
	uint64_t resp_length = 0, moved;
	size_t rlen = 0;
	a->decision = "allowed";
	snprintf(a->reason, sizeof(a->reason), "allowed");
	x->up_again = false;
	static const char go_on[] = "HTTP/1.1 100 Continue\r\n\r\n";
	bool ok = sbx_relay_write_all(up, out, n, &lim) == 0 &&
		  (!x->expect || x->req_kind == SBX_BODY_NONE ||
		   sbx_relay_write_all(c->client, go_on, sizeof(go_on) - 1, &lim) == 0) &&
		  forward_body(c->client, up, c->buf, &c->len, BUF_CAP, x->req_kind, x->req_length, &lim, &moved) == 0;
	a->up = ok ? moved : 0;
	struct sbx_http_head r;
	if (!ok || read_response(up, c->client, rbuf, &rlen, &r, &lim, g, x, out) != 0 ||
	    sbx_http_response_body(&r, x->head_request, &resp_kind, &resp_length) != 0) {
		refuse_upstream(c, a, errno == ETIMEDOUT ? 504 : 502, x->t);
		return false;
	}
	bool keep_alive = x->keep_alive && resp_kind != SBX_BODY_UNTIL_CLOSE;
	bool up_again = resp_kind != SBX_BODY_UNTIL_CLOSE && sbx_http_keep_alive(&r);
	a->status = r.status;
	if (sbx_http_forward_response(&r, keep_alive, x->client_10, out, OUT_CAP, &n) != 0) {
		refuse_upstream(c, a, 502, x->t);
		return false;
	}
	if (x->mask)
		gw_secrets_mask(g->secrets, x->t->host, x->t->port, out, &n, OUT_CAP);
	buf_consume(rbuf, &rlen, r.length);
	ok = sbx_relay_write_all(c->client, out, n, &lim) == 0 &&
	     (x->mask ? serve_forward_masked(up, c->client, rbuf, &rlen, BUF_CAP, resp_kind, resp_length, &lim, &moved,
					     g->secrets, x->t->host, x->t->port)
		      : forward_body(up, c->client, rbuf, &rlen, BUF_CAP, resp_kind, resp_length, &lim, &moved)) == 0;
	a->down = ok ? moved : 0;
	if (!ok)
		snprintf(a->reason, sizeof(a->reason), "allowed; the response was cut short");
	x->up_again = ok && up_again && rlen == 0;
	audit_write(g, a);
	return ok && keep_alive;
}

/* One absolute-form request; true when the connection may carry another. */
bool serve_absolute(struct conn *c, const struct sbx_http_head *h, struct audit *a, char *rbuf, char *out)
{
	struct gateway *g = c->g;
	char authority[300], path[SBX_HTTP_HEAD_MAX], reason[400], why[200];
	struct sbx_egress_target t;
	struct sbx_egress_decision d;
	struct exchange x = { .t = &t };
	size_t n;
	int status;

	if ((status = split_target(h, authority, sizeof(authority), path, sizeof(path), reason, sizeof(reason)))) {
		snprintf(a->host, sizeof(a->host), "%.*s", (int)(h->target_len < 200 ? h->target_len : 200), h->target);
		conn_refuse(c, a, "malformed", status, reason);
		return false;
	}
	if (sbx_http_request_body(h, &x.req_kind, &x.req_length, why, sizeof(why)) != 0) {
		snprintf(a->host, sizeof(a->host), "%s", authority);
		snprintf(reason, sizeof(reason), "Sandbox network access refused the request: %s", why);
		conn_refuse(c, a, "malformed", 400, reason);
		return false;
	}
	x.expect = sbx_http_has_token(h, "Expect", "100-continue");
	/* Plain HTTP carries no secret: a placeholder anywhere is refused
	 * before the name is even looked up. */
	snprintf(a->host, sizeof(a->host), "%s", authority);
	if (!serve_screen(c, h, x.req_kind, x.req_length, &x.expect, NULL, 0, a))
		return false;
	if (decide(c, authority, 80, &t, &d, a) != 0)
		return false;
	x.keep_alive = sbx_http_keep_alive(h);
	x.head_request = h->method_len == 4 && !memcmp(h->method, "HEAD", 4);
	x.client_10 = h->minor == 0;
	if (sbx_http_forward_request(h, t.host, t.port, path, g->via_proxy, g->via_proxy ? g->proxy.authorization : NULL,
				     false, out, OUT_CAP, &n) != 0) {
		conn_refuse(c, a, "malformed", 400, "Sandbox network access refused the request: its head is too large");
		return false;
	}
	int up = connect_upstream(c, &d, a, &status);
	if (up < 0) {
		refuse_upstream(c, a, status, &t);
		return false;
	}
	buf_consume(c->buf, &c->len, h->length);
	bool again = serve_exchange(c, up, &x, a, rbuf, out, n);
	close(up);
	return again;
}
