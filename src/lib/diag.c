/* diag.c — JSON-line diagnostics; built with jansson so any text is escaped. */
#include "diag.h"
#include "exitcodes.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static const char *program = "sbx";

void sbx_diag_program(const char *name)
{
	program = name;
}

const char *sbx_diag_program_name(void)
{
	return program;
}

static void emit(const char *level, const char *code, const char *message,
		 const char *remedy)
{
	json_t *o = json_object();
	char *line;

	json_object_set_new(o, "level", json_string(level));
	json_object_set_new(o, "code", json_string(code));
	/* json_string refuses invalid UTF-8; keep the diagnostic anyway. */
	json_t *msg = json_string(message);
	json_object_set_new(o, "message", msg ? msg : json_string("(message was not valid UTF-8)"));
	if (remedy && *remedy)
		json_object_set_new(o, "remedy", json_string(remedy));
	json_object_set_new(o, "program", json_string(program));
	line = json_dumps(o, JSON_COMPACT);
	if (line) {
		fprintf(stderr, "%s\n", line);
		free(line);
	}
	json_decref(o);
}

void sbx_diag(const char *level, const char *code, const char *remedy,
	      const char *fmt, ...)
{
	char message[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	emit(level, code, message, remedy);
}

void sbx_diag_error(const struct sbx_error *e)
{
	emit("error", e->code[0] ? e->code : "error", e->message, e->remedy);
}

_Noreturn void sbx_die(const struct sbx_error *e)
{
	sbx_diag_error(e);
	exit(e->exit_code ? e->exit_code : SBX_EXIT_INTERNAL);
}
