/* hash.c — SHA-256 hex digests through OpenSSL's EVP interface. */
#include "hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>

void sbx_sha256_hex(const void *data, size_t len, char out[SBX_SHA256_HEX_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL);
	for (unsigned int i = 0; i < md_len && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	out[SBX_SHA256_HEX_LEN] = '\0';
}

/* sbx reads no OpenSSL configuration: it only hashes, and loading
 * openssl.cnf costs every program start a few milliseconds. */
__attribute__((constructor)) static void crypto_init(void)
{
	OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
}
