/* error.h — the one error value every sbx function carries upward: an exit
 * class, a stable machine code, a message naming what failed, a remedy. */
#ifndef SBX_ERROR_H
#define SBX_ERROR_H

struct sbx_error {
	int exit_code;      /* one of enum sbx_exit */
	char code[64];      /* stable, kebab-case: "bad-input", "bwrap-missing" */
	char message[1024]; /* what failed, naming the field or file */
	char remedy[1024];  /* what the operator can do; empty when nothing */
};

__attribute__((format(printf, 4, 5)))
void sbx_error_set(struct sbx_error *e, int exit_code, const char *code,
		   const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
void sbx_error_remedy(struct sbx_error *e, const char *fmt, ...);
/* Prefixes the message with "<context>: " (e.g. the field path). */
void sbx_error_prefix(struct sbx_error *e, const char *context);
void sbx_error_clear(struct sbx_error *e);

#endif
