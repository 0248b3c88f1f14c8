/* http_head.c — strict HTTP/1.x head parsing, body framing and the
 * hop-by-hop field rules; no allocation, fields point into the buffer. */
#include "http_head.h"
#include "../lib/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int fail(char *why, size_t size, const char *what)
{
	snprintf(why, size, "%s", what);
	return -1;
}

static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The end of the line starting at p (pointing at its CR), or NULL when the
 * buffer ends first; a bare CR or LF is malformed (*bad). */
static const char *line_end(const char *p, const char *end, bool *bad)
{
	for (; p < end; p++) {
		if (*p == '\r')
			return p + 1 < end ? (p[1] == '\n' ? p : (*bad = true, NULL)) : NULL;
		if (*p == '\n') {
			*bad = true;
			return NULL;
		}
	}
	return NULL;
}

static int parse_version(const char *p, size_t n, int *minor)
{
	if (n != 8 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1'))
		return -1;
	*minor = p[7] - '0';
	return 0;
}

/* Fields from p up to the empty line. */
static int parse_fields(const char *p, const char *end, struct sbx_http_head *h, const char *buf, char *why,
			size_t size)
{
	for (;;) {
		bool bad = false;
		const char *eol = line_end(p, end, &bad);
		if (bad)
			return fail(why, size, "a line of the head does not end in CRLF");
		if (!eol)
			return 1;
		if (eol == p) {
			h->length = (size_t)(eol + 2 - buf);
			return 0;
		}
		if (*p == ' ' || *p == '\t')
			return fail(why, size, "folded header lines are not accepted");
		const char *colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p)
			return fail(why, size, "a header line without a name");
		for (const char *q = p; q < colon; q++)
			if (!is_tchar((unsigned char)*q))
				return fail(why, size, "a header name holds a character a token cannot");
		const char *v = colon + 1, *ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (const char *q = v; q < ve; q++)
			if (((unsigned char)*q < 0x20 && *q != '\t') || *q == 0x7f)
				return fail(why, size, "a header value holds a control byte");
		if (h->n_fields == SBX_HTTP_MAX_HEADERS)
			return fail(why, size, "more than 128 header fields");
		h->fields[h->n_fields++] = (struct sbx_http_field){ p, v, (size_t)(colon - p), (size_t)(ve - v) };
		p = eol + 2;
	}
}

int sbx_http_parse_request(const char *buf, size_t len, struct sbx_http_head *h, char *why, size_t size)
{
	const char *end = buf + (len > SBX_HTTP_HEAD_MAX ? SBX_HTTP_HEAD_MAX : len);
	bool bad = false;

	memset(h, 0, sizeof(*h));
	const char *eol = line_end(buf, end, &bad);
	if (bad)
		return fail(why, size, "the request line does not end in CRLF");
	if (!eol)
		return 1;
	const char *sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || sp1 == buf || sp2 == sp1 + 1 || memchr(sp2 + 1, ' ', (size_t)(eol - sp2 - 1)))
		return fail(why, size, "the request line is not METHOD TARGET VERSION");
	for (const char *q = buf; q < sp1; q++)
		if (!is_tchar((unsigned char)*q))
			return fail(why, size, "the method is not a token");
	for (const char *q = sp1 + 1; q < sp2; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f)
			return fail(why, size, "the request target holds a control, space or non-ASCII byte");
	if (parse_version(sp2 + 1, (size_t)(eol - sp2 - 1), &h->minor) != 0)
		return fail(why, size, "the version is not HTTP/1.0 or HTTP/1.1");
	h->line = buf;
	h->line_len = (size_t)(eol - buf);
	h->method = buf;
	h->method_len = (size_t)(sp1 - buf);
	h->target = sp1 + 1;
	h->target_len = (size_t)(sp2 - sp1 - 1);
	return parse_fields(eol + 2, end, h, buf, why, size);
}

int sbx_http_parse_response(const char *buf, size_t len, struct sbx_http_head *h, char *why, size_t size)
{
	const char *end = buf + (len > SBX_HTTP_HEAD_MAX ? SBX_HTTP_HEAD_MAX : len);
	bool bad = false;

	memset(h, 0, sizeof(*h));
	h->method = h->target = "";
	const char *eol = line_end(buf, end, &bad);
	if (bad)
		return fail(why, size, "the status line does not end in CRLF");
	if (!eol)
		return 1;
	if (eol - buf < 12 || parse_version(buf, 8, &h->minor) != 0 || buf[8] != ' ' ||
	    buf[9] < '1' || buf[9] > '5' || buf[10] < '0' || buf[10] > '9' || buf[11] < '0' || buf[11] > '9' ||
	    (eol - buf > 12 && buf[12] != ' '))
		return fail(why, size, "the status line is not HTTP/1.x NNN");
	h->line = buf;
	h->line_len = (size_t)(eol - buf);
	h->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	return parse_fields(eol + 2, end, h, buf, why, size);
}

static bool field_is(const struct sbx_http_field *f, const char *name)
{
	return f->name_len == strlen(name) && strncasecmp(f->name, name, f->name_len) == 0;
}

const struct sbx_http_field *sbx_http_field(const struct sbx_http_head *h, const char *name)
{
	for (size_t i = 0; i < h->n_fields; i++)
		if (field_is(&h->fields[i], name))
			return &h->fields[i];
	return NULL;
}

/* Whether the comma-separated value holds token (optional whitespace). */
static bool list_has(const char *v, size_t n, const char *token, size_t tlen)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t start = i;
		while (i < n && v[i] != ',')
			i++;
		size_t stop = i;
		while (stop > start && (v[stop - 1] == ' ' || v[stop - 1] == '\t'))
			stop--;
		if (stop - start == tlen && strncasecmp(v + start, token, tlen) == 0)
			return true;
	}
	return false;
}

bool sbx_http_has_token(const struct sbx_http_head *h, const char *name, const char *token)
{
	for (size_t i = 0; i < h->n_fields; i++)
		if (field_is(&h->fields[i], name) &&
		    list_has(h->fields[i].value, h->fields[i].value_len, token, strlen(token)))
			return true;
	return false;
}

/* Digits only, at most 18 of them. */
static int parse_length(const struct sbx_http_field *f, uint64_t *out)
{
	if (f->value_len == 0 || f->value_len > 18)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < f->value_len; i++) {
		if (f->value[i] < '0' || f->value[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(f->value[i] - '0');
	}
	*out = v;
	return 0;
}

/* Every Content-Length field must agree; -1 when one is malformed or they
 * differ, 0 when there is none, 1 with *length otherwise. */
static int content_length(const struct sbx_http_head *h, uint64_t *length)
{
	int found = 0;
	for (size_t i = 0; i < h->n_fields; i++) {
		uint64_t v;
		if (!field_is(&h->fields[i], "Content-Length"))
			continue;
		if (parse_length(&h->fields[i], &v) != 0 || (found && v != *length))
			return -1;
		*length = v;
		found = 1;
	}
	return found;
}

int sbx_http_request_body(const struct sbx_http_head *h, enum sbx_http_body *kind, uint64_t *length, char *why,
			  size_t size)
{
	const struct sbx_http_field *te = sbx_http_field(h, "Transfer-Encoding");
	int cl = content_length(h, length);

	*kind = SBX_BODY_NONE;
	if (cl < 0)
		return fail(why, size, "a malformed or repeated Content-Length");
	if (te && cl)
		return fail(why, size, "both Content-Length and Transfer-Encoding: refused (request smuggling)");
	if (te) {
		size_t n = 0;
		for (size_t i = 0; i < h->n_fields; i++)
			n += field_is(&h->fields[i], "Transfer-Encoding");
		if (n != 1 || te->value_len != 7 || strncasecmp(te->value, "chunked", 7) != 0 || h->minor == 0)
			return fail(why, size, "a Transfer-Encoding other than chunked");
		*kind = SBX_BODY_CHUNKED;
		return 0;
	}
	if (cl)
		*kind = *length ? SBX_BODY_LENGTH : SBX_BODY_NONE;
	return 0;
}

int sbx_http_response_body(const struct sbx_http_head *h, bool head_request, enum sbx_http_body *kind,
			   uint64_t *length)
{
	*kind = SBX_BODY_NONE;
	if (head_request || h->status < 200 || h->status == 204 || h->status == 304)
		return 0;
	const struct sbx_http_field *te = sbx_http_field(h, "Transfer-Encoding");
	if (te) {
		/* chunked must be the final coding; anything else runs to the close. */
		size_t n = te->value_len;
		bool chunked_last = n >= 7 && strncasecmp(te->value + n - 7, "chunked", 7) == 0 &&
				    (n == 7 || te->value[n - 8] == ',' || te->value[n - 8] == ' ');
		*kind = chunked_last && !sbx_http_field(h, "Content-Length") ? SBX_BODY_CHUNKED : SBX_BODY_UNTIL_CLOSE;
		return 0;
	}
	int cl = content_length(h, length);
	if (cl < 0)
		return -1;
	*kind = cl ? (*length ? SBX_BODY_LENGTH : SBX_BODY_NONE) : SBX_BODY_UNTIL_CLOSE;
	return 0;
}

bool sbx_http_keep_alive(const struct sbx_http_head *h)
{
	if (sbx_http_has_token(h, "Connection", "close") || sbx_http_has_token(h, "Proxy-Connection", "close"))
		return false;
	if (h->minor == 0)
		return sbx_http_has_token(h, "Connection", "keep-alive") ||
		       sbx_http_has_token(h, "Proxy-Connection", "keep-alive");
	return true;
}

bool sbx_http_hop_by_hop(const struct sbx_http_head *h, const struct sbx_http_field *f, bool drop_host)
{
	static const char *const fixed[] = { "Connection", "Proxy-Connection", "Proxy-Authorization",
					     "Proxy-Authenticate", "Keep-Alive", "TE", "Upgrade" };
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (field_is(f, fixed[i]))
			return true;
	if (drop_host && field_is(f, "Host"))
		return true;
	for (size_t i = 0; i < h->n_fields; i++)
		if (field_is(&h->fields[i], "Connection") &&
		    list_has(h->fields[i].value, h->fields[i].value_len, f->name, f->name_len))
			return true;
	return false;
}

static int append(char *out, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int append(char *out, size_t cap, size_t *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(out + *n, cap - *n, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= cap - *n)
		return -1;
	*n += (size_t)w;
	return 0;
}

/* The fields that go on; with the `added` ones of the proxy's own, no more
 * than a parser (ours included) takes. */
static int append_fields(const struct sbx_http_head *h, bool request, size_t added, char *out, size_t cap, size_t *n)
{
	size_t kept = added;
	for (size_t i = 0; i < h->n_fields; i++) {
		const struct sbx_http_field *f = &h->fields[i];
		if (sbx_http_hop_by_hop(h, f, request) || (request && field_is(f, "Expect")))
			continue;
		if (++kept > SBX_HTTP_MAX_HEADERS)
			return -1;
		if (append(out, cap, n, "%.*s: %.*s\r\n", (int)f->name_len, f->name, (int)f->value_len, f->value) != 0)
			return -1;
	}
	return 0;
}

int sbx_http_forward_request(const struct sbx_http_head *h, const char *host, int port, const char *path,
			     bool absolute, const char *proxy_auth, bool tls, char *out, size_t cap, size_t *n)
{
	char authority[300];
	snprintf(authority, sizeof(authority), port == (tls ? 443 : 80) ? "%.253s" : "%.253s:%d", host, port);
	*n = 0;
	if (append(out, cap, n, "%.*s %s%s%s HTTP/1.1\r\nHost: %s\r\n", (int)h->method_len, h->method,
		   absolute ? "http://" : "", absolute ? authority : "", path, authority) != 0 ||
	    append_fields(h, true, proxy_auth && *proxy_auth ? 3 : 2, out, cap, n) != 0)
		return -1;
	if (proxy_auth && *proxy_auth && append(out, cap, n, "Proxy-Authorization: %s\r\n", proxy_auth) != 0)
		return -1;
	return append(out, cap, n, tls ? "\r\n" : "Connection: close\r\n\r\n");
}

int sbx_http_forward_response(const struct sbx_http_head *r, bool keep_alive, bool client_10, char *out, size_t cap,
			      size_t *n)
{
	*n = 0;
	if (append(out, cap, n, "%.*s\r\n", (int)r->line_len, r->line) != 0 || append_fields(r, false, 1, out, cap, n) != 0)
		return -1;
	const char *conn = !keep_alive ? "Connection: close\r\n" : client_10 ? "Connection: keep-alive\r\n" : "";
	return append(out, cap, n, "%s\r\n", conn);
}

enum { CH_SIZE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER, CH_TRAILER_LF, CH_DONE };

long sbx_chunked_scan(struct sbx_chunked *c, const char *p, size_t len, bool *done)
{
	size_t i = 0;
	*done = c->state == CH_DONE;
	while (i < len && c->state != CH_DONE) {
		char ch = p[i];
		switch (c->state) {
		case CH_SIZE: {
			int v = sbx_hex_digit(ch);
			if (v >= 0) {
				if (++c->digits > 15)
					return -1;
				c->remaining = c->remaining * 16 + (uint64_t)v;
			} else if (c->digits && (ch == ';' || ch == ' ' || ch == '\t')) {
				c->state = CH_EXT;
			} else if (c->digits && ch == '\r') {
				c->state = CH_SIZE_LF;
			} else {
				return -1;
			}
			i++;
			break;
		}
		case CH_EXT:
			if (ch == '\r')
				c->state = CH_SIZE_LF;
			else if (ch == '\n' || (unsigned char)ch < 0x09 || ++c->line > 4096)
				return -1;
			i++;
			break;
		case CH_SIZE_LF:
			if (ch != '\n')
				return -1;
			c->state = c->remaining ? CH_DATA : CH_TRAILER;
			c->line = 0;
			i++;
			break;
		case CH_DATA: {
			size_t take = len - i < c->remaining ? len - i : (size_t)c->remaining;
			c->remaining -= take;
			i += take;
			if (!c->remaining)
				c->state = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
		case CH_DATA_LF:
			if (ch != (c->state == CH_DATA_CR ? '\r' : '\n'))
				return -1;
			c->state = c->state == CH_DATA_CR ? CH_DATA_LF : CH_SIZE;
			c->digits = 0;
			i++;
			break;
		case CH_TRAILER:
			if (ch == '\r') {
				c->state = CH_TRAILER_LF;
			} else if (ch == '\n' || ++c->trailers > SBX_HTTP_HEAD_MAX) {
				return -1;
			} else {
				c->line++;
			}
			i++;
			break;
		case CH_TRAILER_LF:
			if (ch != '\n')
				return -1;
			c->state = c->line == 0 ? CH_DONE : CH_TRAILER;
			c->line = 0;
			i++;
			break;
		}
	}
	*done = c->state == CH_DONE;
	return (long)i;
}
