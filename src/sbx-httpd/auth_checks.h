/* auth_checks.h — runner-api 3 as pure functions: the bearer header and
 * the execution signature (HMAC-SHA256 keyed by the token over
 * "<timestamp>\n<hex sha256(body)>"), compared in constant time. */
#ifndef SBX_REQUEST_AUTH_H
#define SBX_REQUEST_AUTH_H

#include <stdbool.h>
#include <stddef.h>

/* "Bearer <token>" exactly (case-sensitive prefix, one space, untrimmed). */
bool sbx_bearer_ok(const char *header, const char *token, size_t token_len);
/* ts: decimal milliseconds, a safe integer within max_age_ms of now_ms
 * either way; sig: 64 lower-case hex digits. */
bool sbx_signature_ok(const char *ts, const char *sig, const void *body, size_t len, const char *token,
		      size_t token_len, long long now_ms, long long max_age_ms);
/* The signature the client sends (65 bytes: 64 hex and a NUL). */
bool sbx_signature_make(const char *ts, const void *body, size_t len, const char *token, size_t token_len,
			char out[65]);

#endif
