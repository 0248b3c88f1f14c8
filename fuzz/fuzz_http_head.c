/* fuzz_http_head.c — libFuzzer target: the gateway's request-head parser,
 * framing, rewriting and chunked scanner on arbitrary bytes: no crash, no
 * overread, a head never longer than its input, a rewritten head that
 * parses again and holds no hop-by-hop field. */
#include "../src/sbx-egress/http_head.c" /* sbx-egress's own parser */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void check_rewrite(const struct sbx_http_head *h)
{
	static char out[SBX_HTTP_HEAD_MAX + 8192];
	char why[200];
	size_t n;
	if (sbx_http_forward_request(h, "a.example", 8080, "/", false, NULL, false, out, sizeof(out), &n) != 0)
		return;
	struct sbx_http_head again;
	if (sbx_http_parse_request(out, n, &again, why, sizeof(why)) != 0 || again.length != n)
		abort();
	for (size_t i = 0; i < again.n_fields; i++) {
		const struct sbx_http_field *f = &again.fields[i];
		bool host = f->name_len == 4 && !memcmp(f->name, "Host", 4);
		bool conn = f->name_len == 10 && !memcmp(f->name, "Connection", 10);
		bool close_named = f->name_len == 5 && !strncasecmp(f->name, "close", 5); /* our "Connection: close" names it */
		if (!host && !conn && !close_named && sbx_http_hop_by_hop(&again, f, false))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct sbx_http_head h;
	char why[200];
	int rc = sbx_http_parse_request(buf, size, &h, why, sizeof(why));
	if (rc == 0) {
		if (h.length > size || h.n_fields > SBX_HTTP_MAX_HEADERS)
			abort();
		enum sbx_http_body kind;
		uint64_t length = 0;
		if (sbx_http_request_body(&h, &kind, &length, why, sizeof(why)) == 0 && kind == SBX_BODY_CHUNKED) {
			struct sbx_chunked c;
			bool done;
			memset(&c, 0, sizeof(c));
			long k = sbx_chunked_scan(&c, buf + h.length, size - h.length, &done);
			if (k > (long)(size - h.length))
				abort();
		}
		sbx_http_keep_alive(&h);
		check_rewrite(&h);
	}
	if (sbx_http_parse_response(buf, size, &h, why, sizeof(why)) == 0) {
		enum sbx_http_body kind;
		uint64_t length;
		if (h.length > size || h.status < 100 || h.status > 599)
			abort();
		sbx_http_response_body(&h, false, &kind, &length);
	}
	return 0;
}
