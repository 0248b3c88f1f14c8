/* hash.c — SHA-256 hex digests through OpenSSL's EVP interface. */
#include "hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>

static void to_hex(const unsigned char *md, unsigned int md_len, char out[SBX_SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	for (unsigned int i = 0; i < md_len && i < 32; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[SBX_SHA256_HEX_LEN] = '\0';
}

void sbx_sha256_hex(const void *data, size_t len, char out[SBX_SHA256_HEX_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL);
	to_hex(md, md_len, out);
}

struct sbx_sha256 *sbx_sha256_new(void)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		ctx = NULL;
	}
	return (struct sbx_sha256 *)ctx;
}

void sbx_sha256_update(struct sbx_sha256 *h, const void *data, size_t len)
{
	EVP_DigestUpdate((EVP_MD_CTX *)h, data, len);
}

void sbx_sha256_final(struct sbx_sha256 *h, char out[SBX_SHA256_HEX_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	EVP_DigestFinal_ex((EVP_MD_CTX *)h, md, &md_len);
	to_hex(md, md_len, out);
	EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

void sbx_sha256_free(struct sbx_sha256 *h)
{
	EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

/* sbx reads no OpenSSL configuration: it only hashes, and loading
 * openssl.cnf costs every program start a few milliseconds. */
__attribute__((constructor)) static void crypto_init(void)
{
	OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
}
