/* hash.h — SHA-256 as lower-case hex (OpenSSL libcrypto underneath). */
#ifndef SBX_HASH_H
#define SBX_HASH_H

#include <stddef.h>

#define SBX_SHA256_HEX_LEN 64

/* Writes 64 hex digits and a NUL into out (at least 65 bytes). */
void sbx_sha256_hex(const void *data, size_t len, char out[SBX_SHA256_HEX_LEN + 1]);

#endif
