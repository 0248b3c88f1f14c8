/* test_gw_secrets.c — the gateway's secret rules on request and response
 * heads: a placeholder only in its secret's own form (the configured field,
 * or the password of Basic credentials), the value put there or the field
 * added, everything else refused; values and Basic forms masked in heads
 * outside the framing fields and starred out in bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../src/sbx-egress/secrets.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PH_HF "sbx-secret-hf-00112233445566778899aabbccddeeff"
#define PH_IDX "sbx-secret-idx-00112233445566778899aabbccddeeff"

static struct gw_secrets S;

static void add(const char *name, const char *host, const char *value, const char *header, const char *user,
		const char *ph)
{
	struct gw_secret *x = &S.v[S.n++];
	memset(x, 0, sizeof(*x));
	snprintf(x->s.name, sizeof(x->s.name), "%s", name);
	snprintf(x->s.hosts[0], sizeof(x->s.hosts[0]), "%s", host);
	x->s.n_hosts = 1;
	x->s.inject = header ? SBX_SECRET_HEADER : SBX_SECRET_BASIC;
	if (header) {
		const char *colon = strchr(header, ':');
		snprintf(x->s.header_name, sizeof(x->s.header_name), "%.*s", (int)(colon - header), header);
		snprintf(x->s.header_format, sizeof(x->s.header_format), "%s", colon + 2);
	} else {
		snprintf(x->s.basic_user, sizeof(x->s.basic_user), "%s", user);
	}
	x->s.value = strdup(value);
	x->s.value_len = strlen(value);
	snprintf(x->placeholder, sizeof(x->placeholder), "%s", ph);
	x->ph_len = strlen(ph);
	assert_int_equal(gw_secret_prepare(x), 0);
}

static int setup(void **state)
{
	(void)state;
	memset(&S, 0, sizeof(S));
	add("hf", "api.test", "hf_VALUE_1234", "authorization: Bearer {}", NULL, PH_HF);
	add("idx", "*.index.test", "idx_VALUE_5678", NULL, "__token__", PH_IDX);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < S.n; i++) {
		free(S.v[i].s.value);
		sbx_secret_buffer_free(S.v[i].basic_value, S.v[i].basic_value_len + 1);
		sbx_secret_buffer_free(S.v[i].basic_placeholder, S.v[i].basic_placeholder_len + 1);
	}
	return 0;
}

/* inject(head) for host, as a string. */
static char *inject(const char *head, const char *host)
{
	static char out[8192];
	size_t n = strlen(head);
	memcpy(out, head, n);
	assert_int_equal(gw_secrets_inject(&S, host, 443, out, &n, sizeof(out)), 0);
	out[n] = '\0';
	return out;
}

static char *basic(const char *creds)
{
	static char b64[512];
	EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)creds, (int)strlen(creds));
	return b64;
}

static void configured_field(void **state)
{
	(void)state;
	/* The field that is just the placeholder, or the format with it, takes
	 * the format with the value. */
	assert_string_equal(inject("GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: " PH_HF "\r\n\r\n", "api.test"),
			    "GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer hf_VALUE_1234\r\n\r\n");
	assert_string_equal(inject("GET / HTTP/1.1\r\nauthorization: Bearer " PH_HF "\r\n\r\n", "api.test"),
			    "GET / HTTP/1.1\r\nauthorization: Bearer hf_VALUE_1234\r\n\r\n");
	/* Absent: added once. */
	assert_string_equal(inject("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n", "api.test"),
			    "GET / HTTP/1.1\r\nHost: api.test\r\nauthorization: Bearer hf_VALUE_1234\r\n\r\n");
	/* The field holds something else: left, nothing added. */
	assert_string_equal(inject("GET / HTTP/1.1\r\nAuthorization: Token abc\r\n\r\n", "api.test"),
			    "GET / HTTP/1.1\r\nAuthorization: Token abc\r\n\r\n");
}

static void other_hosts_untouched(void **state)
{
	(void)state;
	const char *head = "GET / HTTP/1.1\r\nX-Token: " PH_HF "\r\n\r\n";
	assert_string_equal(inject(head, "other.test"), head);
	assert_string_equal(inject(head, "sub.api.test"), head); /* api.test is exact */
}

static void basic_credentials(void **state)
{
	(void)state;
	char head[600], want[600];
	/* Whatever user the client named: the configured one goes. */
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n", basic("someone:" PH_IDX));
	snprintf(want, sizeof(want), "GET / HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n", basic("__token__:idx_VALUE_5678"));
	assert_string_equal(inject(head, "pypi.index.test"), want);
	snprintf(want, sizeof(want), "GET / HTTP/1.1\r\nHost: a.index.test\r\nAuthorization: Basic %s\r\n\r\n",
		 basic("__token__:idx_VALUE_5678"));
	assert_string_equal(inject("GET / HTTP/1.1\r\nHost: a.index.test\r\n\r\n", "a.index.test"), want);
	/* The wildcard is below the label boundary only. */
	assert_string_equal(inject("GET / HTTP/1.1\r\n\r\n", "index.test"), "GET / HTTP/1.1\r\n\r\n");
}

static const struct gw_secret *misplaced(const char *head, const char *host, bool *form)
{
	return gw_secrets_misplaced(&S, head, strlen(head), true, host, 443, form);
}

static void screened(void **state)
{
	(void)state;
	char head[600];
	bool form;
	assert_null(misplaced("GET / HTTP/1.1\r\nAuthorization: " PH_HF "\r\n\r\n", "api.test", &form));
	assert_null(misplaced("GET / HTTP/1.1\r\nAuthorization: Bearer " PH_HF "\r\n\r\n", "api.test", &form));
	/* Elsewhere in a head for its own host: its form was broken. */
	assert_ptr_equal(misplaced("GET / HTTP/1.1\r\nX-Echo: " PH_HF "\r\n\r\n", "api.test", &form), &S.v[0]);
	assert_true(form);
	assert_ptr_equal(misplaced("GET /?t=" PH_HF " HTTP/1.1\r\nAuthorization: " PH_HF "\r\n\r\n", "api.test", &form),
			 &S.v[0]);
	assert_ptr_equal(misplaced("GET / HTTP/1.1\r\nAuthorization: Token " PH_HF "\r\n\r\n", "api.test", &form),
			 &S.v[0]);
	/* Another host, or none (plain HTTP, a CONNECT head). */
	assert_ptr_equal(misplaced("GET / HTTP/1.1\r\nAuthorization: " PH_HF "\r\n\r\n", "other.test", &form), &S.v[0]);
	assert_false(form);
	assert_ptr_equal(misplaced("GET / HTTP/1.1\r\nAuthorization: " PH_HF "\r\n\r\n", NULL, &form), &S.v[0]);
	/* Basic: only as the password of Authorization, only for a Basic secret. */
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n", basic("u:" PH_IDX));
	assert_null(misplaced(head, "x.index.test", &form));
	assert_ptr_equal(misplaced(head, "api.test", &form), &S.v[1]);
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n", basic(PH_IDX ":pw"));
	assert_ptr_equal(misplaced(head, "x.index.test", &form), &S.v[1]);
	assert_true(form);
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nAuthorization:  Basic %s\r\n\r\n", basic("u:" PH_HF));
	assert_ptr_equal(misplaced(head, "api.test", &form), &S.v[0]);
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n", basic("u:" PH_IDX));
	assert_ptr_equal(misplaced(head, "x.index.test", &form), &S.v[1]);
	/* A body: as bytes, anywhere for its own host, never elsewhere. */
	const char *body = "token=" PH_HF;
	assert_null(gw_secrets_misplaced(&S, body, strlen(body), false, "api.test", 443, &form));
	assert_ptr_equal(gw_secrets_misplaced(&S, body, strlen(body), false, "other.test", 443, &form), &S.v[0]);
	assert_null(gw_secrets_misplaced(NULL, body, strlen(body), false, NULL, 0, &form));
}

static void masked(void **state)
{
	(void)state;
	char out[4096];
	snprintf(out, sizeof(out), "HTTP/1.1 200 hf_VALUE_1234\r\nContent-Length: 5\r\nX-Echo: Bearer hf_VALUE_1234, "
				   "hf_VALUE_1234\r\n\r\n");
	size_t n = strlen(out);
	gw_secrets_mask(&S, "api.test", 443, out, &n, sizeof(out));
	out[n] = '\0';
	assert_string_equal(out, "HTTP/1.1 200 " PH_HF "\r\nContent-Length: 5\r\nX-Echo: Bearer " PH_HF ", " PH_HF "\r\n\r\n");
	/* The Basic form echoed comes back as the placeholder's. */
	char want[600];
	snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\nX-Echo: Basic %s\r\n\r\n", basic("__token__:idx_VALUE_5678"));
	snprintf(want, sizeof(want), "HTTP/1.1 200 OK\r\nX-Echo: Basic %s\r\n\r\n", basic("__token__:" PH_IDX));
	n = strlen(out);
	gw_secrets_mask(&S, "a.index.test", 443, out, &n, sizeof(out));
	out[n] = '\0';
	assert_string_equal(out, want);
	/* No room for the longer placeholder: starred out, never left. */
	char tight[80] = "HTTP/1.1 200 OK\r\nX: hf_VALUE_1234\r\n\r\n";
	n = strlen(tight);
	gw_secrets_mask(&S, "api.test", 443, tight, &n, n + 4);
	tight[n] = '\0';
	assert_string_equal(tight, "HTTP/1.1 200 OK\r\nX: *************\r\n\r\n");
}

static void starred(void **state)
{
	(void)state;
	char body[] = "{\"echo\": \"Bearer hf_VALUE_1234\", \"again\": \"hf_VALUE_1234\"}";
	gw_secrets_star(&S, "api.test", 443, body, strlen(body));
	assert_string_equal(body, "{\"echo\": \"Bearer *************\", \"again\": \"*************\"}");
	assert_int_equal(gw_secrets_longest(&S, "api.test", 443), strlen("hf_VALUE_1234"));
	assert_int_equal(gw_secrets_longest(&S, "other.test", 443), 0);
	/* A value made of stars: the search moves on past each hit. */
	struct gw_secret *x = &S.v[0];
	char *saved = x->s.value;
	size_t saved_len = x->s.value_len;
	x->s.value = (char *)"********";
	x->s.value_len = 8;
	char stars[] = "a ******** b ********";
	gw_secrets_star(&S, "api.test", 443, stars, strlen(stars));
	char head[80] = "HTTP/1.1 200 OK\r\nX: ********\r\n\r\n";
	size_t n = strlen(head);
	gw_secrets_mask(&S, "api.test", 443, head, &n, n);
	x->s.value = saved;
	x->s.value_len = saved_len;
	assert_string_equal(stars, "a ******** b ********");
}

static void too_large(void **state)
{
	(void)state;
	char out[64] = "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n";
	size_t n = strlen(out);
	assert_int_equal(gw_secrets_inject(&S, "api.test", 443, out, &n, 48), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(configured_field), cmocka_unit_test(other_hosts_untouched),
		cmocka_unit_test(basic_credentials), cmocka_unit_test(screened),
		cmocka_unit_test(masked),           cmocka_unit_test(starred),
		cmocka_unit_test(too_large),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
