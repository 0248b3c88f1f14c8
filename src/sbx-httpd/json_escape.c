/* json_escape.c — the streaming JSON string escaper: quote, backslash and
 * control characters escaped as jansson does, invalid UTF-8 as U+FFFD, a
 * character split across pieces carried to the next. */
#include "json_escape.h"
#include "../lib/json.h"

#include <stdbool.h>
#include <string.h>

static size_t escape_byte(unsigned char c, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	switch (c) {
	case '"': memcpy(out, "\\\"", 2); return 2;
	case '\\': memcpy(out, "\\\\", 2); return 2;
	case '\b': memcpy(out, "\\b", 2); return 2;
	case '\f': memcpy(out, "\\f", 2); return 2;
	case '\n': memcpy(out, "\\n", 2); return 2;
	case '\r': memcpy(out, "\\r", 2); return 2;
	case '\t': memcpy(out, "\\t", 2); return 2;
	default:
		if (c >= 0x20) {
			out[0] = (char)c;
			return 1;
		}
		memcpy(out, "\\u00", 4);
		out[4] = hex[c >> 4];
		out[5] = hex[c & 15];
		return 6;
	}
}

/* Escapes the characters of p[0, n); stops before an incomplete one at the
 * end unless final. *used gets the bytes consumed. */
static size_t escape_run(const unsigned char *p, size_t n, bool final, char *out, size_t *used)
{
	size_t i = 0, o = 0;
	while (i < n) {
		if (p[i] < 0x80) {
			o += escape_byte(p[i++], out + o);
			continue;
		}
		int len = sbx_utf8_sequence(p + i, n - i);
		if (len < 0 && !final)
			break;
		if (len <= 0) {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, p + i, (size_t)len);
		o += (size_t)len;
		i += (size_t)len;
	}
	*used = i;
	return o;
}

size_t sbx_json_escape(struct sbx_json_escaper *x, const void *in, size_t n, bool final, char *out)
{
	const unsigned char *p = in;
	size_t o = 0, used;
	/* Finish the carried character with the first bytes of this piece. */
	while (x->n_carry) {
		size_t take = n < 4 - x->n_carry ? n : 4 - x->n_carry;
		unsigned char b[8];
		memcpy(b, x->carry, x->n_carry);
		memcpy(b + x->n_carry, p, take);
		o += escape_run(b, x->n_carry + take, final && take == n, out + o, &used);
		if (used == 0) { /* still incomplete: n was too short to finish it */
			memcpy(x->carry + x->n_carry, p, take);
			x->n_carry += take;
			return o;
		}
		if (used >= x->n_carry) { /* the carried bytes are written */
			p += used - x->n_carry;
			n -= used - x->n_carry;
			x->n_carry = 0;
		} else { /* an invalid carried byte was written; the rest carried on */
			memmove(x->carry, x->carry + used, x->n_carry - used);
			x->n_carry -= used;
		}
	}
	o += escape_run(p, n, final, out + o, &used);
	x->n_carry = n - used;
	memcpy(x->carry, p + used, x->n_carry);
	return o;
}

size_t sbx_json_escaped_prefix(const void *in, size_t n, size_t budget)
{
	const unsigned char *p = in;
	size_t i = 0, used = 0;
	char scratch[6];
	while (i < n) {
		int len = p[i] < 0x80 ? 1 : sbx_utf8_sequence(p + i, n - i);
		size_t cost = p[i] < 0x80 ? escape_byte(p[i], scratch) : len > 0 ? (size_t)len : 3;
		if (used + cost > budget)
			break;
		used += cost;
		i += len > 0 ? (size_t)len : 1;
	}
	return i;
}
