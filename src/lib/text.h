/* text.h — trimming ASCII white space, in place or into a copy, hex
 * digits and percent-decoding. */
#ifndef SBX_TEXT_H
#define SBX_TEXT_H

#include <stddef.h>

/* s without leading and trailing white space (the end is cut in place). */
char *sbx_trim(char *s);
/* A trimmed copy of the n bytes at s (NULL when out of memory); free() it. */
char *sbx_trim_dup(const char *s, size_t n);
/* The value of a hex digit (either case), or -1. */
int sbx_hex_digit(char c);
/* Percent-decodes the n bytes at p into out (size bytes, NUL-terminated;
 * *len its length); -1 on a bad escape, a NUL or no room. */
int sbx_percent_decode(const char *p, size_t n, char *out, size_t size, size_t *len);

#endif
