/* serve.c — one client connection of the gateway: read a request head,
 * decide (allowlist, resolve, classify), then tunnel a CONNECT or forward an
 * absolute-form request with its Host rewritten and hop-by-hop fields gone. */
#include "egress.h"
#include "../lib/egress_addr.h"
#include "../lib/http_head.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define BUF_CAP (SBX_HTTP_HEAD_MAX + 16 * 1024)
#define OUT_CAP (SBX_HTTP_HEAD_MAX + 8 * 1024)

struct conn {
	struct gateway *g;
	int client;
	char *buf;      /* client bytes still unused: a head and what follows it */
	size_t len;
	struct sbx_relay_limits head; /* for the request head being read */
	struct admission *ad;
};

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

static void consume(char *buf, size_t *len, size_t n)
{
	memmove(buf, buf + n, *len - n);
	*len -= n;
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
static void refuse(struct conn *c, struct audit *a, const char *decision, int status, const char *reason)
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
	refuse(c, a, "failed", status, reason);
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
		refuse(c, a, status == 400 ? "malformed" : "denied", status, reason);
		return -1;
	}
	sbx_egress_decide(&c->g->policy, t, overrides_resolve, &c->g->resolve, d);
	if (!d->allowed) {
		refuse(c, a, "denied", 403, d->reason);
		return -1;
	}
	return 0;
}

static void serve_connect(struct conn *c, const struct sbx_http_head *h, struct audit *a)
{
	struct gateway *g = c->g;
	struct sbx_egress_target t;
	struct sbx_egress_decision d;
	char authority[300];
	int status;

	snprintf(authority, sizeof(authority), "%.*s", (int)(h->target_len < 299 ? h->target_len : 299), h->target);
	if (h->target_len >= sizeof(authority)) {
		refuse(c, a, "malformed", 400, "the CONNECT authority is longer than 253 bytes and a port");
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
static bool serve_absolute(struct conn *c, const struct sbx_http_head *h, struct audit *a, char *rbuf, char *out)
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
		refuse(c, a, "malformed", status, reason);
		return false;
	}
	if (sbx_http_request_body(h, &req_kind, &req_length, why, sizeof(why)) != 0) {
		snprintf(a->host, sizeof(a->host), "%s", authority);
		snprintf(reason, sizeof(reason), "Sandbox network access refused the request: %s", why);
		refuse(c, a, "malformed", 400, reason);
		return false;
	}
	if (decide(c, authority, 80, &t, &d, a) != 0)
		return false;
	bool keep_alive = sbx_http_keep_alive(h), head_request = h->method_len == 4 && !memcmp(h->method, "HEAD", 4);
	bool client_10 = h->minor == 0;
	if (sbx_http_forward_request(h, t.host, t.port, path, g->via_proxy, g->via_proxy ? g->proxy.authorization : NULL,
				     out, OUT_CAP, &n) != 0) {
		refuse(c, a, "malformed", 400, "Sandbox network access refused the request: its head is too large");
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

/* The time a connection has to send its next request head: from its
 * accept for the first (a refused one gets at most a second before its
 * 429), from the end of the exchange before for each later one. */
static void head_limits(struct conn *c, bool first)
{
	int ms = c->ad->refuse && c->g->head_timeout_ms > 1000 ? 1000 : c->g->head_timeout_ms;
	c->head.idle_ms = ms;
	c->head.deadline_ms = (first ? c->ad->accepted_ms : sbx_monotonic_ms()) + ms;
}

void gateway_serve(struct gateway *g, int client, const char *sent, size_t sent_len, struct admission *ad)
{
	struct conn c = { .g = g, .client = client, .ad = ad };
	char *rbuf = malloc(BUF_CAP), *out = malloc(OUT_CAP);
	c.buf = malloc(BUF_CAP);
	if (c.buf && sent_len && sent_len <= BUF_CAP) {
		memcpy(c.buf, sent, sent_len);
		c.len = sent_len;
	}
	for (bool again = c.buf && rbuf && out, first = true; again; first = false) {
		struct sbx_http_head h;
		struct audit a;
		char why[200], reason[300];
		memset(&a, 0, sizeof(a));
		a.peer = ad->uid;
		a.started_ms = first ? ad->accepted_ms : sbx_monotonic_ms();
		head_limits(&c, first);
		peers_head_begin(g, ad);
		enum head rc = read_head(&c, &h, why, sizeof(why));
		peers_head_end(g, ad);
		if (rc == HEAD_OK)
			snprintf(a.method, sizeof(a.method), "%.*s", (int)(h.method_len < 23 ? h.method_len : 23), h.method);
		atomic_store(&g->last_activity_ms, sbx_monotonic_ms());
		if (ad->refuse) {
			/* Answered whether or not its head came, unless it left. */
			if (rc != HEAD_GONE)
				refuse(&c, &a, "busy", 429, ad->reason);
			break;
		}
		if (rc == HEAD_GONE || (rc == HEAD_LATE && !c.len))
			break;
		if (rc == HEAD_LATE) {
			snprintf(reason, sizeof(reason),
				 "Sandbox network access closed a request whose head did not arrive within %d ms",
				 g->head_timeout_ms);
			refuse(&c, &a, "timeout", 408, reason);
			break;
		}
		if (rc == HEAD_BAD) {
			snprintf(reason, sizeof(reason), "Sandbox network access refused a malformed request: %s", why);
			refuse(&c, &a, "malformed", 400, reason);
			break;
		}
		if (h.method_len == 7 && !memcmp(h.method, "CONNECT", 7)) {
			serve_connect(&c, &h, &a);
			break;
		}
		again = serve_absolute(&c, &h, &a, rbuf, out);
	}
	free(c.buf);
	free(rbuf);
	free(out);
	close(client);
}
