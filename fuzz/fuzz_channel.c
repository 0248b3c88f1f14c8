/* fuzz_channel.c — libFuzzer target: the worker channel decoder fed
 * arbitrary bytes in arbitrary pieces (the first byte picks the piece
 * size) must never crash, leak, or deliver a message its schema refuses. */
#include "channel.h"

#include <stdint.h>
#include <stdlib.h>

static int check(json_t *m, const char *type, void *arg)
{
	(void)arg;
	const char *t;
	char why[200];
	if (sbx_channel_check(m, &t, why, sizeof(why)) < 0 || t != type)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_channel c;
	if (size == 0)
		return 0;
	size_t piece = (size_t)data[0] % 17 + 1;
	sbx_channel_init(&c, 65536);
	for (size_t off = 1; off < size; off += piece) {
		size_t n = size - off < piece ? size - off : piece;
		if (sbx_channel_feed(&c, data + off, n, check, NULL) != 0)
			break;
	}
	sbx_channel_free(&c);
	return 0;
}
