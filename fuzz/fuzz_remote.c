/* fuzz_remote.c — libFuzzer target: the remote workspace key and path
 * grammars and the canonical base64 decoder on arbitrary bytes. A key or
 * path that passes has no '.'/'..'/empty segment and no '\'; a decoded
 * text re-encodes (OpenSSL) to exactly itself. */
#include "base64.h"
#include "remote_path.h" /* the grammars sbx-httpd and sbx-ws share */

#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void segments_clean(const char *s)
{
	if (*s == '/' || strchr(s, '\\') || strstr(s, "//"))
		abort();
	for (const char *p = s; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && !strncmp(p, "..", 2)))
			abort();
		p += n + (p[n] == '/');
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), out[SBX_REMOTE_PATH_MAX + 1];
	unsigned char *bytes = malloc(size / 4 * 3 + 3), *again = malloc(size + 8);
	if (!text || !bytes || !again)
		goto done;
	memcpy(text, data, size);
	text[size] = '\0';
	if (sbx_remote_key(text, out, sizeof(out)))
		segments_clean(out);
	if (sbx_remote_rel_path(text, out, sizeof(out)))
		segments_clean(out);
	size_t n = 0;
	if (sbx_base64_decode(text, size, bytes, &n)) {
		int m = EVP_EncodeBlock(again, bytes, (int)n);
		if ((size_t)m != size || memcmp(again, data, size) != 0)
			abort();
	}
done:
	free(text);
	free(bytes);
	free(again);
	return 0;
}
