/* http_head.h — HTTP/1.x message heads as a proxy meets them: strict
 * parsing of request and response heads (capped), body framing, and the
 * hop-by-hop rules a forwarding proxy applies. */
#ifndef SBX_HTTP_HEAD_H
#define SBX_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SBX_HTTP_HEAD_MAX (64 * 1024)
#define SBX_HTTP_MAX_HEADERS 128

struct sbx_http_field {
	const char *name, *value; /* point into the parsed buffer; not terminated */
	size_t name_len, value_len;
};

struct sbx_http_head {
	const char *line;            /* the request or status line, without CRLF */
	size_t line_len;
	const char *method, *target; /* request: method and target; response: "" */
	size_t method_len, target_len;
	int status;                  /* response only */
	int minor;                   /* HTTP/1.<minor>: 0 or 1 */
	struct sbx_http_field fields[SBX_HTTP_MAX_HEADERS];
	size_t n_fields;
	size_t length;               /* bytes of the head, its final CRLF included */
};

/* Parses the head at the start of buf. 0 complete, 1 incomplete (read more,
 * unless len has reached SBX_HTTP_HEAD_MAX), -1 malformed and why. Lines end
 * in CRLF; no folding, no control bytes, header names are tokens. */
int sbx_http_parse_request(const char *buf, size_t len, struct sbx_http_head *h, char *why, size_t size);
int sbx_http_parse_response(const char *buf, size_t len, struct sbx_http_head *h, char *why, size_t size);

/* The value of the first field of that name (case-insensitive), or NULL. */
const struct sbx_http_field *sbx_http_field(const struct sbx_http_head *h, const char *name);

/* Whether a comma-separated field (Connection, Transfer-Encoding ...) holds
 * the token, case-insensitively. */
bool sbx_http_has_token(const struct sbx_http_head *h, const char *name, const char *token);

enum sbx_http_body { SBX_BODY_NONE, SBX_BODY_LENGTH, SBX_BODY_CHUNKED, SBX_BODY_UNTIL_CLOSE };

/* A request's body: none, Content-Length or chunked. Both Content-Length and
 * Transfer-Encoding, a coding other than chunked, or disagreeing lengths are
 * refused (-1, why): a proxy that guesses is a smuggling vector. */
int sbx_http_request_body(const struct sbx_http_head *h, enum sbx_http_body *kind, uint64_t *length, char *why,
			  size_t size);
/* A response's body, given the request method (HEAD has none). */
int sbx_http_response_body(const struct sbx_http_head *h, bool head_request, enum sbx_http_body *kind,
			   uint64_t *length);

/* Whether the client wants the connection kept open after this exchange. */
bool sbx_http_keep_alive(const struct sbx_http_head *h);

/* Whether a field is hop-by-hop for this message: the fixed set
 * (Connection, Proxy-Connection, Proxy-Authorization, Proxy-Authenticate,
 * Keep-Alive, TE, Upgrade) or one the Connection field names. Host is
 * reported too when drop_host: the proxy sets it from the target. */
bool sbx_http_hop_by_hop(const struct sbx_http_head *h, const struct sbx_http_field *f, bool drop_host);

/* The request head a forwarding proxy sends: the target in origin form
 * (absolute when another proxy comes next), Host from the vetted target
 * (port shown unless 80), no hop-by-hop field, no Expect (the proxy answers
 * 100 itself), proxy_auth (or NULL) as Proxy-Authorization, and
 * Connection: close; with tls (a request inside an intercepted TLS
 * session) the port is shown unless 443 and the connection is kept. -1
 * when it exceeds cap. */
int sbx_http_forward_request(const struct sbx_http_head *h, const char *host, int port, const char *path,
			     bool absolute, const char *proxy_auth, bool tls, char *out, size_t cap, size_t *n);
/* The response head for the client: hop-by-hop fields dropped, then the
 * proxy's own Connection decision. */
int sbx_http_forward_response(const struct sbx_http_head *r, bool keep_alive, bool client_10, char *out, size_t cap,
			      size_t *n);

/* Incremental chunked-body scanner: it tracks where a chunked body ends so a
 * proxy can relay it verbatim and know where the next message starts. */
struct sbx_chunked {
	int state;
	uint64_t remaining;
	size_t line;        /* bytes of the current size or trailer line */
	size_t trailers;    /* bytes of trailers so far */
	int digits;
};

/* Feeds up to len bytes; returns how many belong to the body (all of them
 * until the end is seen), sets *done at its end; -1 malformed. */
long sbx_chunked_scan(struct sbx_chunked *c, const char *p, size_t len, bool *done);

#endif
