/* uuid.c — version 4 UUIDs. */
#include "uuid.h"

#include <stdio.h>
#include <string.h>
#include <sys/random.h>

void sbx_uuid4(const char *prefix, char *out, size_t size)
{
	unsigned char b[16];
	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		memset(b, 0, sizeof(b));
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, size, "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", prefix, b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}
