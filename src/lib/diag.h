/* diag.h — diagnostics on stderr, one JSON object per line:
 * {"level":"error","code":"...","message":"...","remedy":"...","program":"..."} */
#ifndef SBX_DIAG_H
#define SBX_DIAG_H

#include "error.h"

void sbx_diag_program(const char *name);
const char *sbx_diag_program_name(void);
__attribute__((format(printf, 4, 5)))
void sbx_diag(const char *level, const char *code, const char *remedy,
	      const char *fmt, ...);
void sbx_diag_error(const struct sbx_error *e);
/* Prints e as an error diagnostic and exits with e->exit_code. */
_Noreturn void sbx_die(const struct sbx_error *e);

#endif
