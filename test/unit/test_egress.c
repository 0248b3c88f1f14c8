/* test_egress.c — the egress core as tables: entry grammar, authority
 * parsing in every IP spelling, matching, classification of every special
 * range at its boundaries (with mapped, NAT64, 6to4 and Teredo forms), the
 * policy revision, and decisions on vetted addresses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "egress_addr.h"
#include "egress_policy.h"

#include <arpa/inet.h>
#include <string.h>

static void entry_grammar(void **state)
{
	(void)state;
	static const struct { const char *text; bool ok; bool wildcard; int port; } rows[] = {
		{ "example.org", true, false, 0 },
		{ "*.example.org", true, true, 0 },
		{ "api.example.org:8443", true, false, 8443 },
		{ "*.example.org:443", true, true, 443 },
		{ "a-b.c0.example", true, false, 0 },
		{ "*", false, false, 0 },
		{ "*.org", false, false, 0 },          /* a wildcard over a single label */
		{ "localhost", false, false, 0 },      /* single label */
		{ "Example.org", false, false, 0 },    /* lower case only */
		{ "127.0.0.1", false, false, 0 },
		{ "127.1", false, false, 0 },
		{ "0x7f.1", false, false, 0 },
		{ "2130706433", false, false, 0 },
		{ "*.0.1", false, false, 0 },          /* all-numeric TLD */
		{ "example.123", false, false, 0 },
		{ "[::1]", false, false, 0 },
		{ "::1", false, false, 0 },
		{ "example.org:0", false, false, 0 },
		{ "example.org:65536", false, false, 0 },
		{ "example.org:080", false, false, 0 },
		{ "example.org:+80", false, false, 0 },
		{ "-bad.example.org", false, false, 0 },
		{ "bad-.example.org", false, false, 0 },
		{ "a..example.org", false, false, 0 },
		{ "ex ample.org", false, false, 0 },
		{ "user@example.org", false, false, 0 },
		{ "bücher.example", false, false, 0 }, /* A-labels only */
		{ "", false, false, 0 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sbx_egress_entry x;
		char why[200];
		int rc = sbx_egress_parse_entry(rows[i].text, &x, why, sizeof(why));
		if ((rc == 0) != rows[i].ok)
			fail_msg("entry '%s': expected %s, got %s (%s)", rows[i].text, rows[i].ok ? "ok" : "refused",
				 rc == 0 ? "ok" : "refused", rc == 0 ? "" : why);
		if (rc == 0) {
			assert_int_equal(x.wildcard, rows[i].wildcard);
			assert_int_equal(x.port, rows[i].port);
		}
	}
	/* 63-byte labels pass, 64 do not; 253 bytes pass, 254 do not. */
	char name[300];
	memset(name, 'a', 63);
	strcpy(name + 63, ".example");
	struct sbx_egress_entry x;
	char why[200];
	assert_int_equal(sbx_egress_parse_entry(name, &x, why, sizeof(why)), 0);
	memset(name, 'a', 64);
	strcpy(name + 64, ".example");
	assert_int_equal(sbx_egress_parse_entry(name, &x, why, sizeof(why)), -1);
}

static void authority_parsing(void **state)
{
	(void)state;
	static const struct { const char *text; int status; const char *host; int port; } rows[] = {
		{ "example.org", 0, "example.org", 443 },
		{ "Example.ORG.", 0, "example.org", 443 },
		{ "example.org:8080", 0, "example.org", 8080 },
		{ "127.0.0.1:80", 403, NULL, 0 },
		{ "2130706433", 403, NULL, 0 },
		{ "0177.0.0.1", 403, NULL, 0 },
		{ "0x7f.1", 403, NULL, 0 },
		{ "127.1:443", 403, NULL, 0 },
		{ "[::1]:443", 403, NULL, 0 },
		{ "[fe80::1%25eth0]:443", 400, NULL, 0 }, /* '%' never belongs to a name */
		{ "::ffff:127.0.0.1", 400, NULL, 0 }, /* unbracketed */
		{ "[::ffff:0:127.0.0.1]:443", 403, NULL, 0 },
		{ "example.org:", 400, NULL, 0 },
		{ "example.org:0", 400, NULL, 0 },
		{ "example.org:65536", 400, NULL, 0 },
		{ "example.org:-1", 400, NULL, 0 },
		{ "example.org:+443", 400, NULL, 0 },
		{ "example.org:0443", 400, NULL, 0 },
		{ "user@example.org", 400, NULL, 0 },
		{ "exa%6dple.org", 400, NULL, 0 },
		{ "example.org\\x", 400, NULL, 0 },
		{ "exa\x01mple.org", 400, NULL, 0 },
		{ "bücher.example", 400, NULL, 0 },
		{ "a..b.org", 400, NULL, 0 },
		{ "localhost", 0, "localhost", 443 }, /* a name: the allowlist refuses it (403) */
		{ "instance-data:80", 0, "instance-data", 80 },
		{ "::1:443", 400, NULL, 0 },	     /* an IPv6 address without brackets does not parse */
		{ "example.org:80:90", 400, NULL, 0 }, /* two ports */
		{ "-bad-.org", 400, NULL, 0 },
		{ "", 400, NULL, 0 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sbx_egress_target t;
		char why[200];
		int status = sbx_egress_parse_authority(rows[i].text, 443, &t, why, sizeof(why));
		if (status != rows[i].status)
			fail_msg("authority '%s': expected %d, got %d (%s)", rows[i].text, rows[i].status, status, why);
		if (status == 0) {
			assert_string_equal(t.host, rows[i].host);
			assert_int_equal(t.port, rows[i].port);
		}
	}
}

static void policy_from(const char *json, struct sbx_egress_policy *p)
{
	struct sbx_error e;
	json_t *doc = json_loads(json, 0, NULL);
	assert_non_null(doc);
	if (sbx_egress_policy_parse(doc, p, &e) != 0)
		fail_msg("policy refused: %s", e.message);
	json_decref(doc);
}

static void matching(void **state)
{
	(void)state;
	struct sbx_egress_policy p;
	policy_from("{\"mode\":\"domain-allowlist\",\"allowedDomains\":[\"example.org\",\"*.cdn.example\",\"pinned.example:8443\"]}", &p);
	static const struct { const char *host; int port; bool match; } rows[] = {
		{ "example.org", 443, true },
		{ "example.org", 80, true },
		{ "www.example.org", 443, false },     /* exact entries match exactly */
		{ "a.cdn.example", 443, true },
		{ "a.b.cdn.example", 443, true },
		{ "cdn.example", 443, false },         /* never the apex */
		{ "xcdn.example", 443, false },        /* label boundary */
		{ "pinned.example", 8443, true },
		{ "pinned.example", 443, false },      /* the pin is respected */
		{ "example.org.evil", 443, false },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct sbx_egress_target t = { .port = rows[i].port };
		snprintf(t.host, sizeof(t.host), "%s", rows[i].host);
		if (sbx_egress_matches(&p, &t) != rows[i].match)
			fail_msg("%s:%d: expected %s", rows[i].host, rows[i].port, rows[i].match ? "a match" : "no match");
	}
	sbx_egress_policy_free(&p);
}

static void classification(void **state)
{
	(void)state;
	static const struct { const char *addr; bool special; } rows[] = {
		{ "0.0.0.0", true }, { "0.255.255.255", true }, { "1.0.0.0", false },
		{ "9.255.255.255", false }, { "10.0.0.0", true }, { "10.255.255.255", true }, { "11.0.0.0", false },
		{ "100.63.255.255", false }, { "100.64.0.0", true }, { "100.127.255.255", true }, { "100.128.0.0", false },
		{ "126.255.255.255", false }, { "127.0.0.1", true }, { "127.255.255.255", true },
		{ "169.253.255.255", false }, { "169.254.0.0", true }, { "169.254.255.255", true }, { "169.255.0.0", false },
		{ "172.15.255.255", false }, { "172.16.0.0", true }, { "172.31.255.255", true }, { "172.32.0.0", false },
		{ "192.0.0.0", true }, { "192.0.0.255", true }, { "192.0.1.0", false },
		{ "192.0.2.0", true }, { "192.0.2.255", true }, { "192.0.3.0", false },
		{ "192.88.99.0", true }, { "192.88.99.255", true }, { "192.88.100.0", false },
		{ "192.167.255.255", false }, { "192.168.0.0", true }, { "192.168.255.255", true }, { "192.169.0.0", false },
		{ "198.17.255.255", false }, { "198.18.0.0", true }, { "198.19.255.255", true }, { "198.20.0.0", false },
		{ "198.51.100.0", true }, { "198.51.101.0", false }, { "203.0.113.255", true }, { "203.0.114.0", false },
		{ "223.255.255.255", false }, { "224.0.0.0", true }, { "239.255.255.255", true },
		{ "240.0.0.0", true }, { "255.255.255.255", true }, { "8.8.8.8", false },
		{ "::", true }, { "::1", true }, { "::2", true }, { "::ffff:127.0.0.1", true }, { "::ffff:7f00:1", true },
		{ "::ffff:8.8.8.8", false }, { "::ffff:10.0.0.1", true }, { "::8.8.8.8", true },
		{ "64:ff9b::8.8.8.8", true }, { "64:ff9b:1::1", true }, { "64:ff9b:2::1", true },
		{ "100::1", true }, { "100:0:0:1::1", true }, { "100:0:0:2::1", true },
		{ "::ffff:0:127.0.0.1", true }, { "::ffff:0:8.8.8.8", true }, { "::ffff:0:0808:0808", true },
		{ "::fffe:0:8.8.8.8", true }, { "4000::1", true }, { "3000::1", false },
		{ "192.31.196.1", true }, { "192.52.193.1", true }, { "192.175.48.1", true }, { "192.175.49.1", false },
		{ "2001::1", true }, { "2001:0:ffff::1", true }, { "2001:1::1", true }, { "2001:1ff::1", true },
		{ "2001:200::1", false }, { "2620:4f:8000::1", true }, { "2620:4f:8001::1", false },
		{ "3fff::1", true }, { "3fff:fff::1", true }, { "3fff:1000::1", false }, { "5f00::1", true },
		{ "5f01::1", true }, { "2fff::1", false },
		{ "2001:db8::1", true }, { "2001:db9::1", false },
		{ "2002::1", true }, { "2002:ffff::1", true }, { "2003::1", false },
		{ "fc00::1", true }, { "fdff::1", true }, { "fe00::1", true }, { "fc0::1", true }, { "2fc0::1", false },
		{ "fe80::1", true }, { "febf::1", true }, { "fec0::1", true }, { "feff::1", true },
		{ "ff00::1", true }, { "ff02::1", true },
		{ "2606:4700::1111", false }, { "not-an-address", true },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *reason = sbx_addr_special_text(rows[i].addr);
		if ((reason != NULL) != rows[i].special)
			fail_msg("%s: expected %s, got %s", rows[i].addr, rows[i].special ? "special" : "public",
				 reason ? reason : "public");
	}
}

static void revision_is_the_content(void **state)
{
	(void)state;
	struct sbx_egress_policy a, b;
	policy_from("{\"mode\":\"domain-allowlist\",\"allowedDomains\":[\"b.example\",\"a.example\",\"a.example\"]}", &a);
	policy_from("{\"mode\":\"domain-allowlist\",\"allowedDomains\":[\"a.example\",\"b.example\"]}", &b);
	assert_string_equal(a.revision, b.revision);
	assert_int_equal(strlen(a.revision), 16);
	sbx_egress_policy_free(&b);
	policy_from("{\"mode\":\"domain-allowlist\",\"allowedDomains\":[\"a.example\",\"b.example\"],\"allowPrivateNetwork\":true}", &b);
	assert_string_not_equal(a.revision, b.revision);
	struct sbx_error e;
	char text[300];
	snprintf(text, sizeof(text), "{\"mode\":\"domain-allowlist\",\"allowedDomains\":[\"c.example\"],\"revision\":\"%s\"}", a.revision);
	json_t *doc = json_loads(text, 0, NULL);
	struct sbx_egress_policy c;
	assert_int_equal(sbx_egress_policy_parse(doc, &c, &e), -1);
	assert_string_equal(e.code, "revision-mismatch");
	json_decref(doc);
	sbx_egress_policy_free(&a);
	sbx_egress_policy_free(&b);
	sbx_egress_policy_free(&c);
}

/* A resolver answering from a fixed list, as --resolve does. */
static int fixed(const char *host, int port, struct sockaddr_storage *out, int max, char *why, size_t size, void *arg)
{
	(void)host;
	(void)why;
	(void)size;
	const char *const *addrs = arg;
	int n = 0;
	for (; addrs[n] && n < max; n++) {
		memset(&out[n], 0, sizeof(out[n]));
		struct sockaddr_in *s4 = (struct sockaddr_in *)&out[n];
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out[n];
		if (inet_pton(AF_INET, addrs[n], &s4->sin_addr) == 1) {
			s4->sin_family = AF_INET;
			s4->sin_port = htons((uint16_t)port);
		} else {
			inet_pton(AF_INET6, addrs[n], &s6->sin6_addr);
			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons((uint16_t)port);
		}
	}
	return n;
}

static void decisions_vet_every_address(void **state)
{
	(void)state;
	struct sbx_egress_policy p;
	struct sbx_egress_decision d;
	struct sbx_egress_target t = { "api.example.org", 443 };
	policy_from("{\"mode\":\"domain-allowlist\",\"allowedDomains\":[\"*.example.org\"]}", &p);
	const char *mixed[] = { "10.0.0.5", "93.184.216.34", "::ffff:127.0.0.1", "2606:4700::1111", NULL };
	sbx_egress_decide(&p, &t, fixed, mixed, &d);
	assert_true(d.allowed);
	assert_int_equal(d.n_vetted, 2); /* only the public ones, in order */
	char text[64];
	sbx_egress_addr_text(&d.vetted[0], text, sizeof(text));
	assert_string_equal(text, "93.184.216.34");
	const char *private_only[] = { "127.0.0.1", "192.168.1.1", NULL };
	sbx_egress_decide(&p, &t, fixed, private_only, &d);
	assert_false(d.allowed);
	assert_non_null(strstr(d.reason, "special-purpose addresses"));
	struct sbx_egress_target other = { "other.test", 443 };
	sbx_egress_decide(&p, &other, fixed, mixed, &d);
	assert_false(d.allowed);
	assert_non_null(strstr(d.reason, "is not in the sandbox network allowed domains"));
	sbx_egress_policy_free(&p);
	policy_from("{\"mode\":\"domain-allowlist\",\"allowedDomains\":[\"*.example.org\"],\"allowPrivateNetwork\":true}", &p);
	sbx_egress_decide(&p, &t, fixed, private_only, &d);
	assert_true(d.allowed);
	assert_int_equal(d.n_vetted, 2);
	sbx_egress_policy_free(&p);
}

/* Found by fuzz_specs: a refused entry leaked the entry table (LSan in
 * `make check SAN=1` would report it here: nothing is freed by hand). */
static void refused_entry_leaves_nothing_to_free(void **state)
{
	(void)state;
	struct sbx_error e;
	struct sbx_egress_policy p;
	json_t *doc = json_loads("{\"mode\":\"domain-allowlist\",\"allowedDomains\":[\"ok.example\",\"bad..example\"]}", 0, NULL);
	assert_int_equal(sbx_egress_policy_parse(doc, &p, &e), -1);
	assert_null(p.entries);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(refused_entry_leaves_nothing_to_free),
		cmocka_unit_test(entry_grammar),
		cmocka_unit_test(authority_parsing),
		cmocka_unit_test(matching),
		cmocka_unit_test(classification),
		cmocka_unit_test(revision_is_the_content),
		cmocka_unit_test(decisions_vet_every_address),
	};
	return cmocka_run_group_tests_name("egress", tests, NULL, NULL);
}
