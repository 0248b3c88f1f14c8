/* auth.c — runner-api 3: the bearer token and the execution signature
 * (HMAC-SHA256 keyed by the token over timestamp "\n" hex(sha256(body))),
 * both compared in constant time. */
#include "httpd.h"
#include "../lib/hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool auth_bearer(const struct config *c, struct req *r)
{
	const char *h = header(r, "authorization");
	if (!h || strncmp(h, "Bearer ", 7) != 0)
		return false;
	const char *given = h + 7;
	size_t n = strlen(given);
	/* Equal lengths are compared in constant time; the length itself is no secret. */
	return n == c->token_len && CRYPTO_memcmp(given, c->token, n) == 0;
}

bool auth_signature(const struct config *c, struct req *r)
{
	const char *ts = header(r, "x-science-execution-timestamp");
	const char *sig = header(r, "x-science-execution-signature");
	if (!ts || !sig || !*ts || strlen(ts) > 16 || strspn(ts, "0123456789") != strlen(ts))
		return false;
	if (strlen(sig) != 64 || strspn(sig, "0123456789abcdef") != 64)
		return false;
	long long stamp = strtoll(ts, NULL, 10), skew = sbx_wall_ms() - stamp;
	if (stamp > 9007199254740991LL || skew > c->signature_max_age_ms || -skew > c->signature_max_age_ms)
		return false;
	char body_hash[SBX_SHA256_HEX_LEN + 1], message[64 + SBX_SHA256_HEX_LEN], want[65];
	sbx_sha256_hex(r->body ? r->body : "", r->len, body_hash);
	int n = snprintf(message, sizeof(message), "%s\n%s", ts, body_hash);
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mac_len = 0;
	if (n < 0 || !HMAC(EVP_sha256(), c->token, (int)c->token_len, (const unsigned char *)message, (size_t)n, mac,
			   &mac_len) || mac_len != 32)
		return false;
	for (unsigned i = 0; i < 32; i++)
		snprintf(want + 2 * i, 3, "%02x", mac[i]);
	return CRYPTO_memcmp(want, sig, 64) == 0;
}
