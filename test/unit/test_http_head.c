/* test_http_head.c — the proxy's HTTP rules as tables: request and
 * response heads (strictness, caps), body framing (CL+TE refused),
 * hop-by-hop fields and Connection-named ones, keep-alive, and the chunked
 * scanner fed whole and byte by byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../src/sbx-egress/http_head.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void request_heads(void **state)
{
	(void)state;
	static const struct { const char *text; int rc; } rows[] = {
		{ "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", 0 },
		{ "CONNECT a.example:443 HTTP/1.1\r\n\r\n", 0 },
		{ "GET http://a.example/ HTTP/1.0\r\n\r\n", 0 },
		{ "GET http://a.example/ HTTP/1.1\r\nHost: a", 1 },            /* incomplete */
		{ "GET http://a.example/ HTTP/1.1\r\n", 1 },
		{ "GET http://a.example/ HTTP/1.1\nHost: a\n\n", -1 },         /* bare LF */
		{ "GET http://a.example/ HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", -1 }, /* bare CR */
		{ "GET http://a.example/ HTTP/2.0\r\n\r\n", -1 },
		{ "GET  http://a.example/ HTTP/1.1\r\n\r\n", -1 },             /* two spaces */
		{ "GET http://a.example/ x HTTP/1.1\r\n\r\n", -1 },
		{ "G(T http://a.example/ HTTP/1.1\r\n\r\n", -1 },              /* method not a token */
		{ "GET http://a.example/\x01 HTTP/1.1\r\n\r\n", -1 },
		{ "GET http://a.example/ HTTP/1.1\r\n X: folded\r\n\r\n", -1 },
		{ "GET http://a.example/ HTTP/1.1\r\nBad Name: v\r\n\r\n", -1 },
		{ "GET http://a.example/ HTTP/1.1\r\n: v\r\n\r\n", -1 },
		{ "GET http://a.example/ HTTP/1.1\r\nX: a\x01z\r\n\r\n", -1 },
		{ "GET http://a.example/ HTTP/1.1\r\nNoColon\r\n\r\n", -1 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sbx_http_head h;
		char why[200];
		int rc = sbx_http_parse_request(rows[i].text, strlen(rows[i].text), &h, why, sizeof(why));
		if (rc != rows[i].rc)
			fail_msg("row %zu: expected %d, got %d (%s)", i, rows[i].rc, rc, rc < 0 ? why : "");
	}
	struct sbx_http_head h;
	char why[200];
	const char *text = "POST http://a.example/x?y HTTP/1.1\r\nHost:  other.test \r\nX-A: 1\r\n\r\nBODY";
	assert_int_equal(sbx_http_parse_request(text, strlen(text), &h, why, sizeof(why)), 0);
	assert_int_equal(h.method_len, 4);
	assert_memory_equal(h.target, "http://a.example/x?y", h.target_len);
	assert_int_equal(h.n_fields, 2);
	assert_int_equal(h.fields[0].value_len, 10); /* surrounding whitespace trimmed */
	assert_memory_equal(h.fields[0].value, "other.test", 10);
	assert_int_equal(h.length, strlen(text) - 4);
}

static void head_caps(void **state)
{
	(void)state;
	size_t n = SBX_HTTP_HEAD_MAX + 100;
	char *big = malloc(n);
	struct sbx_http_head h;
	char why[200];
	memcpy(big, "GET http://a.example/ HTTP/1.1\r\n", 32);
	for (size_t i = 32; i < n; i += 8)
		memcpy(big + i, "X-Y: z\r\n", 8 <= n - i ? 8 : n - i);
	/* No end of head within 64 KiB: still "incomplete", and the caller
	 * (holding 64 KiB) refuses; more than 128 fields is malformed. */
	int rc = sbx_http_parse_request(big, n, &h, why, sizeof(why));
	assert_int_equal(rc, -1);
	assert_non_null(strstr(why, "128"));
	free(big);
}

static void framing(void **state)
{
	(void)state;
	static const struct { const char *fields; int rc; enum sbx_http_body kind; uint64_t length; } rows[] = {
		{ "", 0, SBX_BODY_NONE, 0 },
		{ "Content-Length: 5\r\n", 0, SBX_BODY_LENGTH, 5 },
		{ "Content-Length: 0\r\n", 0, SBX_BODY_NONE, 0 },
		{ "Content-Length: 5\r\nContent-Length: 5\r\n", 0, SBX_BODY_LENGTH, 5 },
		{ "Content-Length: 5\r\nContent-Length: 6\r\n", -1, SBX_BODY_NONE, 0 },
		{ "Content-Length: +5\r\n", -1, SBX_BODY_NONE, 0 },
		{ "Content-Length: 5 5\r\n", -1, SBX_BODY_NONE, 0 },
		{ "Content-Length: 9999999999999999999\r\n", -1, SBX_BODY_NONE, 0 },
		{ "Transfer-Encoding: chunked\r\n", 0, SBX_BODY_CHUNKED, 0 },
		{ "Transfer-Encoding: Chunked\r\n", 0, SBX_BODY_CHUNKED, 0 },
		{ "Transfer-Encoding: gzip, chunked\r\n", -1, SBX_BODY_NONE, 0 },
		{ "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", -1, SBX_BODY_NONE, 0 },
		{ "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", -1, SBX_BODY_NONE, 0 },
		{ "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", -1, SBX_BODY_NONE, 0 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char text[512], why[200];
		struct sbx_http_head h;
		enum sbx_http_body kind;
		uint64_t length = 0;
		snprintf(text, sizeof(text), "POST http://a.example/ HTTP/1.1\r\n%s\r\n", rows[i].fields);
		assert_int_equal(sbx_http_parse_request(text, strlen(text), &h, why, sizeof(why)), 0);
		int rc = sbx_http_request_body(&h, &kind, &length, why, sizeof(why));
		if (rc != rows[i].rc)
			fail_msg("row %zu (%s): expected %d, got %d", i, rows[i].fields, rows[i].rc, rc);
		if (rc == 0) {
			assert_int_equal(kind, rows[i].kind);
			assert_int_equal(length, rows[i].length);
		}
	}
	char why[200];
	struct sbx_http_head h;
	const char *both = "POST http://a.example/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
	enum sbx_http_body kind;
	uint64_t length;
	sbx_http_parse_request(both, strlen(both), &h, why, sizeof(why));
	sbx_http_request_body(&h, &kind, &length, why, sizeof(why));
	assert_non_null(strstr(why, "smuggling"));
}

static void response_framing(void **state)
{
	(void)state;
	static const struct { const char *head; bool head_req; enum sbx_http_body kind; } rows[] = {
		{ "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", false, SBX_BODY_LENGTH },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", true, SBX_BODY_NONE },
		{ "HTTP/1.1 204 No Content\r\n\r\n", false, SBX_BODY_NONE },
		{ "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", false, SBX_BODY_NONE },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, SBX_BODY_CHUNKED },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false, SBX_BODY_CHUNKED },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false, SBX_BODY_UNTIL_CLOSE },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", false, SBX_BODY_UNTIL_CLOSE },
		{ "HTTP/1.0 200 OK\r\n\r\n", false, SBX_BODY_UNTIL_CLOSE },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sbx_http_head h;
		char why[200];
		enum sbx_http_body kind;
		uint64_t length;
		assert_int_equal(sbx_http_parse_response(rows[i].head, strlen(rows[i].head), &h, why, sizeof(why)), 0);
		assert_int_equal(sbx_http_response_body(&h, rows[i].head_req, &kind, &length), 0);
		if (kind != rows[i].kind)
			fail_msg("row %zu: expected kind %d, got %d", i, rows[i].kind, kind);
	}
	static const char *const bad[] = { "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 600 X\r\n\r\n", "HTTP/1.1 200OK\r\n\r\n",
					   "HTTP/3 200 OK\r\n\r\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sbx_http_head h;
		char why[200];
		assert_int_equal(sbx_http_parse_response(bad[i], strlen(bad[i]), &h, why, sizeof(why)), -1);
	}
	struct sbx_http_head h;
	char why[200];
	const char *ok = "HTTP/1.1 200\r\n\r\n";
	assert_int_equal(sbx_http_parse_response(ok, strlen(ok), &h, why, sizeof(why)), 0);
	assert_int_equal(h.status, 200);
}

static void hop_by_hop(void **state)
{
	(void)state;
	const char *text = "GET http://a.example/ HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: Basic eA==\r\n"
			   "Proxy-Connection: keep-alive\r\nConnection: X-Secret, keep-alive\r\nX-Secret: 1\r\n"
			   "TE: trailers\r\nUpgrade: websocket\r\nKeep-Alive: 5\r\nAccept: */*\r\nX-Kept: 2\r\n\r\n";
	struct sbx_http_head h;
	char why[200];
	assert_int_equal(sbx_http_parse_request(text, strlen(text), &h, why, sizeof(why)), 0);
	char kept[256] = "";
	for (size_t i = 0; i < h.n_fields; i++)
		if (!sbx_http_hop_by_hop(&h, &h.fields[i], true))
			snprintf(kept + strlen(kept), sizeof(kept) - strlen(kept), "%.*s;", (int)h.fields[i].name_len,
				 h.fields[i].name);
	assert_string_equal(kept, "Accept;X-Kept;");
	/* Host is the proxy's to set, but a response keeps its fields. */
	assert_false(sbx_http_hop_by_hop(&h, &h.fields[0], false));
}

static void rewriting(void **state)
{
	(void)state;
	const char *text = "POST http://api.example:8080/p?q HTTP/1.1\r\nHost: other.test\r\nProxy-Authorization: Basic eA==\r\n"
			   "Connection: X-Secret\r\nX-Secret: 1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
	struct sbx_http_head h;
	char why[200], out[1024];
	size_t n;
	assert_int_equal(sbx_http_parse_request(text, strlen(text), &h, why, sizeof(why)), 0);
	assert_int_equal(sbx_http_forward_request(&h, "api.example", 8080, "/p?q", false, NULL, false, out, sizeof(out), &n), 0);
	out[n] = '\0';
	assert_string_equal(out, "POST /p?q HTTP/1.1\r\nHost: api.example:8080\r\nContent-Length: 3\r\nConnection: close\r\n\r\n");
	/* Through another proxy: absolute form, our own credentials. */
	assert_int_equal(sbx_http_forward_request(&h, "api.example", 80, "/", true, "Basic dTpw", false, out, sizeof(out), &n), 0);
	out[n] = '\0';
	assert_string_equal(out, "POST http://api.example/ HTTP/1.1\r\nHost: api.example\r\nContent-Length: 3\r\n"
				 "Proxy-Authorization: Basic dTpw\r\nConnection: close\r\n\r\n");
	assert_int_equal(sbx_http_forward_request(&h, "api.example", 80, "/", false, NULL, false, out, 40, &n), -1);

	/* Found by fuzzing: 127 fields plus the proxy's Host and Connection
	 * would exceed what a parser takes; refused instead of sent. */
	char *many = malloc(SBX_HTTP_HEAD_MAX), *big = malloc(SBX_HTTP_HEAD_MAX + 8192);
	size_t len = (size_t)sprintf(many, "GET http://a.example/ HTTP/1.1\r\n");
	for (int i = 0; i < 127; i++)
		len += (size_t)sprintf(many + len, "X-%d: v\r\n", i);
	len += (size_t)sprintf(many + len, "\r\n");
	assert_int_equal(sbx_http_parse_request(many, len, &h, why, sizeof(why)), 0);
	assert_int_equal(sbx_http_forward_request(&h, "a.example", 80, "/", false, NULL, false, big, SBX_HTTP_HEAD_MAX + 8192, &n), -1);
	free(many);
	free(big);

	const char *resp = "HTTP/1.1 301 Moved\r\nLocation: http://elsewhere.test/\r\nKeep-Alive: 5\r\n"
			   "Connection: keep-alive\r\nContent-Length: 0\r\n\r\n";
	assert_int_equal(sbx_http_parse_response(resp, strlen(resp), &h, why, sizeof(why)), 0);
	assert_int_equal(sbx_http_forward_response(&h, false, false, out, sizeof(out), &n), 0);
	out[n] = '\0';
	/* Redirects pass through untouched (never followed). */
	assert_string_equal(out, "HTTP/1.1 301 Moved\r\nLocation: http://elsewhere.test/\r\nContent-Length: 0\r\n"
				 "Connection: close\r\n\r\n");
	assert_int_equal(sbx_http_forward_response(&h, true, false, out, sizeof(out), &n), 0);
	out[n] = '\0';
	assert_null(strstr(out, "Connection"));
}

static void keep_alive(void **state)
{
	(void)state;
	static const struct { const char *text; bool keep; } rows[] = {
		{ "GET http://a.example/ HTTP/1.1\r\n\r\n", true },
		{ "GET http://a.example/ HTTP/1.1\r\nConnection: close\r\n\r\n", false },
		{ "GET http://a.example/ HTTP/1.1\r\nProxy-Connection: Close\r\n\r\n", false },
		{ "GET http://a.example/ HTTP/1.0\r\n\r\n", false },
		{ "GET http://a.example/ HTTP/1.0\r\nProxy-Connection: keep-alive\r\n\r\n", true },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sbx_http_head h;
		char why[200];
		assert_int_equal(sbx_http_parse_request(rows[i].text, strlen(rows[i].text), &h, why, sizeof(why)), 0);
		assert_int_equal(sbx_http_keep_alive(&h), rows[i].keep);
	}
}

/* Feeds text whole and one byte at a time: the end is found at the same
 * byte either way. */
static long scan_all(const char *text, size_t n, bool bytewise, bool *done)
{
	struct sbx_chunked c;
	memset(&c, 0, sizeof(c));
	size_t used = 0;
	*done = false;
	while (used < n && !*done) {
		size_t step = bytewise ? 1 : n - used;
		long k = sbx_chunked_scan(&c, text + used, step, done);
		if (k < 0)
			return -1;
		used += (size_t)k;
	}
	return (long)used;
}

static void chunked(void **state)
{
	(void)state;
	static const struct { const char *text; long end; } rows[] = {
		{ "5\r\nhello\r\n0\r\n\r\nGET next", 15 },
		{ "5;ext=1\r\nhello\r\n0\r\n\r\n", 21 },
		{ "A\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\nrest", 34 },
		{ "0\r\n\r\n", 5 },
		{ "5\r\nhello\r\n", 10 },           /* not finished: all of it is body */
		{ "5\r\nhelloX\r\n0\r\n\r\n", -1 }, /* data longer than its size */
		{ "g\r\n", -1 },
		{ "\r\n", -1 },
		{ "5\nhello\r\n0\r\n\r\n", -1 },    /* bare LF */
		{ "1234567890123456\r\n", -1 },     /* size beyond 15 hex digits */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool done_whole, done_bytes;
		long whole = scan_all(rows[i].text, strlen(rows[i].text), false, &done_whole);
		long bytes = scan_all(rows[i].text, strlen(rows[i].text), true, &done_bytes);
		if (whole != rows[i].end || bytes != rows[i].end)
			fail_msg("row %zu: expected %ld, got %ld whole and %ld bytewise", i, rows[i].end, whole, bytes);
		assert_int_equal(done_whole, done_bytes);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(request_heads), cmocka_unit_test(head_caps),  cmocka_unit_test(framing),
		cmocka_unit_test(response_framing), cmocka_unit_test(hop_by_hop), cmocka_unit_test(rewriting),
		cmocka_unit_test(keep_alive),
		cmocka_unit_test(chunked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
