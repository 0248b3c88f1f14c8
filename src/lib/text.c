/* text.c — trimming white space, hex digits, and percent-decoding. */
#include "text.h"

#include <ctype.h>
#include <string.h>

int sbx_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *sbx_trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

char *sbx_trim_dup(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s))
		s++, n--;
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return strndup(s, n);
}

/* Percent-decodes [p, p+n) into out; -1 on a bad escape or a NUL. */
int sbx_percent_decode(const char *p, size_t n, char *out, size_t size, size_t *len)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c == '%') {
			if (i + 2 >= n || sbx_hex_digit(p[i + 1]) < 0 || sbx_hex_digit(p[i + 2]) < 0)
				return -1;
			c = (char)(sbx_hex_digit(p[i + 1]) * 16 + sbx_hex_digit(p[i + 2]));
			i += 2;
		}
		if (c == '\0' || k + 1 >= size)
			return -1;
		out[k++] = c;
	}
	out[k] = '\0';
	*len = k;
	return 0;
}
