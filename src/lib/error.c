/* error.c — filling struct sbx_error; messages are truncated, never overflowed. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sbx_error_clear(struct sbx_error *e)
{
	memset(e, 0, sizeof(*e));
}

void sbx_error_set(struct sbx_error *e, int exit_code, const char *code,
		   const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return;
	sbx_error_clear(e);
	e->exit_code = exit_code;
	snprintf(e->code, sizeof(e->code), "%s", code);
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

void sbx_error_remedy(struct sbx_error *e, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return;
	va_start(ap, fmt);
	vsnprintf(e->remedy, sizeof(e->remedy), fmt, ap);
	va_end(ap);
}

void sbx_error_prefix(struct sbx_error *e, const char *context)
{
	if (!e || !context || !*context)
		return;
	size_t room = sizeof(e->message) - 1;
	size_t clen = strlen(context);
	if (clen > room - 2)
		clen = room - 2;
	size_t keep = strlen(e->message);
	if (keep > room - 2 - clen)
		keep = room - 2 - clen;
	memmove(e->message + clen + 2, e->message, keep);
	memcpy(e->message, context, clen);
	e->message[clen] = ':';
	e->message[clen + 1] = ' ';
	e->message[clen + 2 + keep] = '\0';
}
