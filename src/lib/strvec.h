/* strvec.h — a growable, NULL-terminated vector of owned strings: argv and
 * environment lists built step by step. */
#ifndef SBX_STRVEC_H
#define SBX_STRVEC_H

#include <stdbool.h>
#include <stddef.h>

struct sbx_strvec {
	char **items; /* NULL-terminated */
	size_t len, cap;
	bool failed;  /* an allocation failed; the vector is incomplete */
};

void sbx_strvec_init(struct sbx_strvec *v);
void sbx_strvec_push(struct sbx_strvec *v, const char *s);
/* Pushes each argument until a NULL. */
void sbx_strvec_pushl(struct sbx_strvec *v, ...) __attribute__((sentinel));
__attribute__((format(printf, 2, 3)))
void sbx_strvec_pushf(struct sbx_strvec *v, const char *fmt, ...);
/* Inserts s before position at (at <= len). */
void sbx_strvec_insert(struct sbx_strvec *v, size_t at, const char *s);
void sbx_strvec_free(struct sbx_strvec *v);

#endif
