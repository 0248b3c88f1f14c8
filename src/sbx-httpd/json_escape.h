/* json_escape.h — bytes of any size escaped into the inside of a JSON
 * string piece by piece, the way sbx_json_string_lossy would write them
 * whole (invalid UTF-8 as U+FFFD), but NUL kept as \u0000. */
#ifndef SBX_JSON_ESCAPE_H
#define SBX_JSON_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

struct sbx_json_escaper {
	unsigned char carry[4]; /* the start of a character the next piece ends */
	size_t n_carry;
};

/* Room out needs for one call with n input bytes. */
#define SBX_JSON_ESCAPE_BOUND(n) (6 * ((n) + 4))

/* Escapes in[0, n) into out; an incomplete character at the end waits for
 * the next call, or becomes U+FFFD when final. Returns the bytes written. */
size_t sbx_json_escape(struct sbx_json_escaper *x, const void *in, size_t n, bool final, char *out);

/* How many bytes of in[0, n) (whole characters) escape into at most
 * budget bytes, counted as sbx_json_escape writes them (final). */
size_t sbx_json_escaped_prefix(const void *in, size_t n, size_t budget);

#endif
