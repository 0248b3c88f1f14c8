/* test_hash.c — SHA-256 against the FIPS 180-2 vectors and sha256sum's
 * answer for a megabyte fed in odd pieces: one-shot, incremental and the
 * freeing paths give the same digests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hash.h"

#include <stdlib.h>
#include <string.h>

static void known_vectors(void **state)
{
	(void)state;
	static const struct { const char *text, *hex; } rows[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	char out[SBX_SHA256_HEX_LEN + 1];
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		sbx_sha256_hex(rows[i].text, strlen(rows[i].text), out);
		assert_string_equal(out, rows[i].hex);
		struct sbx_sha256 *h = sbx_sha256_new();
		assert_non_null(h);
		for (const char *p = rows[i].text; *p; p++)
			sbx_sha256_update(h, p, 1);
		sbx_sha256_final(h, out);
		assert_string_equal(out, rows[i].hex);
	}
}

/* A million 'a' (the FIPS long vector), in pieces of 1 to 8191 bytes. */
static void long_message_in_pieces(void **state)
{
	(void)state;
	size_t n = 1000000;
	char *a = malloc(n), out[SBX_SHA256_HEX_LEN + 1];
	assert_non_null(a);
	memset(a, 'a', n);
	struct sbx_sha256 *h = sbx_sha256_new();
	for (size_t off = 0, step = 1; off < n; off += step, step = step * 7 % 8191 + 1)
		sbx_sha256_update(h, a + off, off + step > n ? n - off : step);
	sbx_sha256_final(h, out);
	assert_string_equal(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	sbx_sha256_hex(a, n, out);
	assert_string_equal(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	sbx_sha256_free(sbx_sha256_new()); /* abandoned: freed without a digest */
	sbx_sha256_free(NULL);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(known_vectors),
		cmocka_unit_test(long_message_in_pieces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
