/* auth_checks.c — bearer and HMAC signature checks; every secret compared
 * with CRYPTO_memcmp. */
#include "auth_checks.h"
#include "../lib/hash.h"

#include <stdbool.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAFE_INTEGER_MAX 9007199254740991LL

bool sbx_bearer_ok(const char *header, const char *token, size_t token_len)
{
	if (!header || strncmp(header, "Bearer ", 7) != 0)
		return false;
	const char *given = header + 7;
	size_t n = strlen(given);
	/* Equal lengths are compared in constant time; the length itself is no secret. */
	return n == token_len && CRYPTO_memcmp(given, token, n) == 0;
}

bool sbx_signature_make(const char *ts, const void *body, size_t len, const char *token, size_t token_len,
			char out[65])
{
	char body_hash[SBX_SHA256_HEX_LEN + 1], message[64 + SBX_SHA256_HEX_LEN];
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mac_len = 0;
	sbx_sha256_hex(body ? body : "", len, body_hash);
	int n = snprintf(message, sizeof(message), "%.40s\n%s", ts, body_hash);
	if (n < 0 || !HMAC(EVP_sha256(), token, (int)token_len, (const unsigned char *)message, (size_t)n, mac,
			   &mac_len) || mac_len != 32)
		return false;
	static const char digits[] = "0123456789abcdef";
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = digits[mac[i] >> 4];
		out[2 * i + 1] = digits[mac[i] & 15];
	}
	out[64] = '\0';
	return true;
}

bool sbx_signature_ok(const char *ts, const char *sig, const void *body, size_t len, const char *token,
		      size_t token_len, long long now_ms, long long max_age_ms)
{
	char want[65];
	if (!ts || !sig || !*ts || strlen(ts) > 16 || strspn(ts, "0123456789") != strlen(ts))
		return false;
	if (strlen(sig) != 64 || strspn(sig, "0123456789abcdef") != 64)
		return false;
	long long stamp = strtoll(ts, NULL, 10), skew = now_ms - stamp;
	if (stamp > SAFE_INTEGER_MAX || skew > max_age_ms || -skew > max_age_ms)
		return false;
	return sbx_signature_make(ts, body, len, token, token_len, want) && CRYPTO_memcmp(want, sig, 64) == 0;
}
