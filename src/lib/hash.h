/* hash.h — SHA-256 as lower-case hex (OpenSSL libcrypto underneath). */
#ifndef SBX_HASH_H
#define SBX_HASH_H

#include <stddef.h>

#define SBX_SHA256_HEX_LEN 64

/* Writes 64 hex digits and a NUL into out (at least 65 bytes). */
void sbx_sha256_hex(const void *data, size_t len, char out[SBX_SHA256_HEX_LEN + 1]);

/* Incremental: new, update as bytes arrive, final (which frees it) or free. */
struct sbx_sha256;
struct sbx_sha256 *sbx_sha256_new(void);
void sbx_sha256_update(struct sbx_sha256 *h, const void *data, size_t len);
void sbx_sha256_final(struct sbx_sha256 *h, char out[SBX_SHA256_HEX_LEN + 1]);
void sbx_sha256_free(struct sbx_sha256 *h);

#endif
