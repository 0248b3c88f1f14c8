/* fuzz_gw_secrets.c — libFuzzer target: the gateway's secret rules on
 * arbitrary request and response heads and bodies: no crash or overread;
 * a head the screen passes, once injected, still parses, holds no
 * placeholder of a bound secret in a field and no value of one bound
 * elsewhere; a masked head outside its framing fields, and a starred body,
 * hold no bound value. */
#include "../src/sbx-egress/http_head.c"
#include "../src/sbx-egress/mint.c"
#include "../src/sbx-egress/secrets_load.c"
#include "../src/sbx-egress/secrets_screen.c"
#include "../src/sbx-egress/secrets_inject.c"
#include "../src/sbx-egress/secrets_mask.c"

#include <stdint.h>

static struct gw_secrets S;

static void add(const char *name, const char *host, const char *value, const char *field, const char *format,
		const char *user, const char *ph)
{
	struct gw_secret *x = &S.v[S.n++];
	snprintf(x->s.name, sizeof(x->s.name), "%s", name);
	snprintf(x->s.hosts[0], sizeof(x->s.hosts[0]), "%s", host);
	x->s.n_hosts = 1;
	x->s.inject = field ? SBX_SECRET_HEADER : SBX_SECRET_BASIC;
	snprintf(x->s.header_name, sizeof(x->s.header_name), "%s", field ? field : "");
	snprintf(x->s.header_format, sizeof(x->s.header_format), "%s", format ? format : "");
	snprintf(x->s.basic_user, sizeof(x->s.basic_user), "%s", user ? user : "");
	x->s.value = strdup(value);
	x->s.value_len = strlen(value);
	snprintf(x->placeholder, sizeof(x->placeholder), "%s", ph);
	x->ph_len = strlen(ph);
	if (gw_secret_prepare(x) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[SBX_HTTP_HEAD_MAX + 8192];
	if (!S.n) {
		add("hf", "a.example", "VALUE_hf_1234", "authorization", "Bearer {}", NULL, "sbx-secret-hf-0123456789abcdef");
		add("ix", "*.a.example", "VALUE_ix_5678", NULL, NULL, "__token__", "sbx-secret-ix-0123456789abcdef");
		add("ot", "b.example", "VALUE_ot_9999", "x-api-key", "{}", NULL, "sbx-secret-ot-0123456789abcdef");
	}
	const char *buf = (const char *)data;
	bool form;
	(void)gw_secrets_misplaced(&S, buf, size, false, NULL, 0, &form);
	struct sbx_http_head h;
	char why[200];
	size_t n;
	if (sbx_http_parse_request(buf, size, &h, why, sizeof(why)) == 0 &&
	    !gw_secrets_misplaced(&S, buf, h.length, true, "x.a.example", 443, &form) &&
	    sbx_http_forward_request(&h, "x.a.example", 443, "/", false, NULL, true, out, sizeof(out), &n) == 0 &&
	    gw_secrets_inject(&S, "x.a.example", 443, out, &n, sizeof(out)) == 0) {
		struct sbx_http_head again;
		if (sbx_http_parse_request(out, n, &again, why, sizeof(why)) != 0 || again.length != n)
			abort();
		for (size_t i = 0; i < again.n_fields; i++)
			if (memmem(again.fields[i].value, again.fields[i].value_len, S.v[1].placeholder, S.v[1].ph_len))
				abort();
		if (memmem(out, n, S.v[2].s.value, S.v[2].s.value_len) && !memmem(buf, size, S.v[2].s.value, S.v[2].s.value_len))
			abort();
	}
	if (size <= SBX_HTTP_HEAD_MAX) {
		memcpy(out, buf, size);
		n = size;
		gw_secrets_star(&S, "a.example", 443, out, n);
		if (memmem(out, n, S.v[0].s.value, S.v[0].s.value_len))
			abort();
		memcpy(out, buf, size);
		gw_secrets_mask(&S, "a.example", 443, out, &n, sizeof(out));
		struct sbx_http_head r;
		if (sbx_http_parse_response(out, n, &r, why, sizeof(why)) == 0)
			for (size_t i = 0; i < r.n_fields; i++)
				if (!framing(r.fields[i].name, r.fields[i].name_len) &&
				    memmem(r.fields[i].value, r.fields[i].value_len, S.v[0].s.value, S.v[0].s.value_len))
					abort();
	}
	return 0;
}
