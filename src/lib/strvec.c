/* strvec.c — growable string vectors. */
#include "strvec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbx_strvec_init(struct sbx_strvec *v)
{
	memset(v, 0, sizeof(*v));
}

static void push_owned(struct sbx_strvec *v, char *s)
{
	if (!s || v->failed) {
		free(s);
		v->failed = true;
		return;
	}
	if (v->len + 2 > v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 32;
		char **items = realloc(v->items, cap * sizeof(*items));
		if (!items) {
			free(s);
			v->failed = true;
			return;
		}
		v->items = items;
		v->cap = cap;
	}
	v->items[v->len++] = s;
	v->items[v->len] = NULL;
}

void sbx_strvec_push(struct sbx_strvec *v, const char *s)
{
	push_owned(v, strdup(s));
}

void sbx_strvec_pushl(struct sbx_strvec *v, ...)
{
	va_list ap;
	const char *s;

	va_start(ap, v);
	while ((s = va_arg(ap, const char *)))
		sbx_strvec_push(v, s);
	va_end(ap);
}

void sbx_strvec_pushf(struct sbx_strvec *v, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	push_owned(v, s);
}

void sbx_strvec_insert(struct sbx_strvec *v, size_t at, const char *s)
{
	size_t before = v->len;
	sbx_strvec_push(v, s);
	if (v->len == before || at >= before)
		return;
	char *moved = v->items[before];
	memmove(v->items + at + 1, v->items + at, (before - at) * sizeof(char *));
	v->items[at] = moved;
}

void sbx_strvec_free(struct sbx_strvec *v)
{
	for (size_t i = 0; i < v->len; i++)
		free(v->items[i]);
	free(v->items);
	sbx_strvec_init(v);
}
