/* base64.h — strict, canonical base64 (RFC 4648, padded): a text decodes
 * only if encoding the result gives the same text back. */
#ifndef SBX_BASE64_H
#define SBX_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* Decodes len characters into out (at least len / 4 * 3 bytes); false
 * for anything but canonical padded base64. */
bool sbx_base64_decode(const char *in, size_t len, unsigned char *out, size_t *out_len);

#endif
