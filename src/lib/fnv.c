/* fnv.c — FNV-1a 64. */
#include "fnv.h"

uint64_t sbx_fnv1a64(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h;
}
