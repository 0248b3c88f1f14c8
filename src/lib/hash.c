/* hash.c — SHA-256 hex digests through OpenSSL's SHA256_* functions: its
 * optimized code without the EVP provider machinery, whose first fetch in
 * a process cost about a millisecond of CPU (every sbx-run start paid it).
 * They are deprecated in OpenSSL 3 but kept; EVP is the fallback to take
 * when they go. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "hash.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

struct sbx_sha256 {
	SHA256_CTX ctx;
};

static void to_hex(const unsigned char md[SHA256_DIGEST_LENGTH], char out[SBX_SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	for (unsigned int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[SBX_SHA256_HEX_LEN] = '\0';
}

void sbx_sha256_hex(const void *data, size_t len, char out[SBX_SHA256_HEX_LEN + 1])
{
	struct sbx_sha256 h;
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256_Init(&h.ctx);
	SHA256_Update(&h.ctx, data, len);
	SHA256_Final(md, &h.ctx);
	to_hex(md, out);
}

struct sbx_sha256 *sbx_sha256_new(void)
{
	struct sbx_sha256 *h = malloc(sizeof(*h));
	if (h && SHA256_Init(&h->ctx) != 1) {
		free(h);
		h = NULL;
	}
	return h;
}

void sbx_sha256_update(struct sbx_sha256 *h, const void *data, size_t len)
{
	SHA256_Update(&h->ctx, data, len);
}

void sbx_sha256_final(struct sbx_sha256 *h, char out[SBX_SHA256_HEX_LEN + 1])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256_Final(md, &h->ctx);
	to_hex(md, out);
	sbx_sha256_free(h);
}

void sbx_sha256_free(struct sbx_sha256 *h)
{
	if (h)
		OPENSSL_cleanse(h, sizeof(*h));
	free(h);
}

/* sbx reads no OpenSSL configuration: it only hashes and MACs, and loading
 * openssl.cnf costs every program start a few milliseconds. */
__attribute__((constructor)) static void crypto_init(void)
{
	OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
}
