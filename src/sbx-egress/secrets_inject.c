/* secrets_inject.c — a screened request head for a secret's host: the
 * secret's own field gets its value (the configured format, or Basic
 * credentials of the configured user), added when the request lacks a
 * field of that name; nothing else changes. */
#include "secrets.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Appends len bytes; false when the buffer is full. */
static bool put(char *dst, size_t *at, size_t cap, const void *src, size_t len)
{
	if (*at + len > cap)
		return false;
	memcpy(dst + *at, src, len);
	*at += len;
	return true;
}

/* The secret's field value as sent: the format with the value, or Basic
 * credentials. */
static bool put_value(char *dst, size_t *at, size_t cap, const struct gw_secret *x)
{
	if (x->s.inject == SBX_SECRET_BASIC)
		return put(dst, at, cap, "Basic ", 6) && put(dst, at, cap, x->basic_value, x->basic_value_len);
	const char *f = x->s.header_format, *slot = strstr(f, "{}");
	return put(dst, at, cap, f, (size_t)(slot - f)) && put(dst, at, cap, x->s.value, x->s.value_len) &&
	       put(dst, at, cap, slot + 2, strlen(slot + 2));
}

static const char *field_of(const struct gw_secret *x)
{
	return x->s.inject == SBX_SECRET_HEADER ? x->s.header_name : "authorization";
}

/* Whether the field (name, value) is x's own form with its placeholder. */
static bool takes(const struct gw_secret *x, const char *name, size_t nlen, const char *v, size_t vlen)
{
	if (nlen != strlen(field_of(x)) || strncasecmp(name, field_of(x), nlen) != 0)
		return false;
	if (x->s.inject == SBX_SECRET_HEADER)
		return gw_field_is_placeholder(x, v, vlen);
	unsigned char creds[GW_BASIC_MAX];
	size_t got;
	bool ok = gw_basic_decode(v, vlen, creds, &got) && gw_basic_is_placeholder(x, creds, got);
	OPENSSL_cleanse(creds, sizeof(creds));
	return ok;
}

int gw_secrets_inject(const struct gw_secrets *s, const char *host, int port, char *out, size_t *n, size_t cap)
{
	bool bound[GW_MAX_SECRETS] = { false }, present[GW_MAX_SECRETS] = { false };
	for (int i = 0; i < s->n; i++)
		bound[i] = sbx_secret_host_matches(&s->v[i].s, host, port);
	char *dst = malloc(cap);
	const char *p = out, *end = out + *n, *eol = memmem(p, *n, "\r\n", 2);
	size_t at = 0;
	bool ok = dst && eol && put(dst, &at, cap, p, (size_t)(eol - p) + 2);
	for (p = eol ? eol + 2 : end; ok && end - p >= 2 && !(p[0] == '\r' && p[1] == '\n');) {
		const char *next = memmem(p, (size_t)(end - p), "\r\n", 2);
		const char *colon = next ? memchr(p, ':', (size_t)(next - p)) : NULL;
		if (!next || !colon) {
			ok = false;
			break;
		}
		eol = next;
		const char *v = colon + 1;
		while (v < eol && (*v == ' ' || *v == '\t'))
			v++;
		size_t nlen = (size_t)(colon - p), vlen = (size_t)(eol - v);
		int taker = -1;
		for (int i = 0; i < s->n; i++) {
			if (!bound[i] || nlen != strlen(field_of(&s->v[i])) || strncasecmp(p, field_of(&s->v[i]), nlen) != 0)
				continue;
			present[i] = true; /* a field of its name is there: none is added */
			if (taker < 0 && takes(&s->v[i], p, nlen, v, vlen))
				taker = i;
		}
		ok = taker < 0 ? put(dst, &at, cap, p, (size_t)(eol - p) + 2)
			       : put(dst, &at, cap, p, nlen) && put(dst, &at, cap, ": ", 2) &&
					 put_value(dst, &at, cap, &s->v[taker]) && put(dst, &at, cap, "\r\n", 2);
		p = eol + 2;
	}
	/* One field per name: of two bound secrets for one field, the first. */
	for (int i = 0; ok && i < s->n; i++) {
		bool added = false;
		for (int k = 0; k < i && !added; k++)
			added = bound[k] && !present[k] && !strcasecmp(field_of(&s->v[i]), field_of(&s->v[k]));
		if (bound[i] && !present[i] && !added)
			ok = put(dst, &at, cap, s->v[i].s.inject == SBX_SECRET_HEADER ? s->v[i].s.header_name : "Authorization",
				 strlen(field_of(&s->v[i]))) &&
			     put(dst, &at, cap, ": ", 2) && put_value(dst, &at, cap, &s->v[i]) && put(dst, &at, cap, "\r\n", 2);
	}
	ok = ok && put(dst, &at, cap, "\r\n", 2);
	if (ok) {
		memcpy(out, dst, at);
		*n = at;
	}
	if (dst) {
		OPENSSL_cleanse(dst, cap);
		free(dst);
	}
	return ok ? 0 : -1;
}
