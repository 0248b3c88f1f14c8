/* base64.c — the decoder: groups of four, '=' only at the end, unused bits
 * of the last group zero (so exactly one text encodes each byte string). */
#include "base64.h"


static int value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

bool sbx_base64_decode(const char *in, size_t len, unsigned char *out, size_t *out_len)
{
	size_t o = 0;
	if (len % 4)
		return false;
	for (size_t i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=' && in[i + 3] == '=') : 0;
		int v[4];
		for (int k = 0; k < 4; k++) {
			v[k] = k >= 4 - pad ? 0 : value(in[i + k]);
			if (v[k] < 0)
				return false;
		}
		unsigned triple = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
		/* Canonical: the bits the padding hides are zero. */
		if ((pad == 1 && (triple & 0xff)) || (pad == 2 && (triple & 0xffff)))
			return false;
		out[o++] = (unsigned char)(triple >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(triple >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)triple;
	}
	*out_len = o;
	return true;
}
