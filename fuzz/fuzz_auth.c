/* fuzz_auth.c — libFuzzer target: the bearer and signature checks on
 * arbitrary header values and bodies (input: timestamp NUL signature NUL
 * authorization NUL body). Properties: the client's own signature of the
 * body is accepted at its timestamp, a flipped digit never is, and only
 * "Bearer " + the token passes. */
#include "../src/sbx-httpd/auth_checks.c" /* sbx-httpd's own checks */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN "fuzz-token"

static const char *field(const char **p, const char *end)
{
	const char *start = *p;
	const char *nul = memchr(start, '\0', (size_t)(end - start));
	if (!nul)
		return NULL;
	*p = nul + 1;
	return start;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	const char *p = buf, *end = buf + size; /* fields end at a NUL of the input */
	const char *ts = field(&p, end), *sig = ts ? field(&p, end) : NULL, *bearer = sig ? field(&p, end) : NULL;
	const char *body = bearer ? p : "";
	size_t len = bearer ? (size_t)(buf + size - p) : 0;
	if (ts && sig) {
		sbx_signature_ok(ts, sig, body, len, TOKEN, strlen(TOKEN), 1700000000000LL, 30000);
		char good[65];
		if (sbx_signature_make("1700000000000", body, len, TOKEN, strlen(TOKEN), good)) {
			if (!sbx_signature_ok("1700000000000", good, body, len, TOKEN, strlen(TOKEN), 1700000000000LL, 30000))
				abort();
			good[0] = good[0] == '0' ? '1' : '0';
			if (sbx_signature_ok("1700000000000", good, body, len, TOKEN, strlen(TOKEN), 1700000000000LL, 30000))
				abort();
		}
	}
	if (bearer && sbx_bearer_ok(bearer, TOKEN, strlen(TOKEN)) != !strcmp(bearer, "Bearer " TOKEN))
		abort();
	free(buf);
	return 0;
}
