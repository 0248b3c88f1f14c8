/* secrets_mask.c — what a secret's host sends back: a value (or its Basic
 * form) echoed in a response head becomes the placeholder again, outside
 * the framing fields; in a body it is starred out, its length kept. */
#include "secrets.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Fields whose bytes decide the framing the gateway already relays by. */
static bool framing(const char *name, size_t len)
{
	static const char *const names[] = { "content-length", "transfer-encoding", "connection", "keep-alive",
					     "proxy-connection", "trailer", "upgrade" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (len == strlen(names[i]) && !strncasecmp(name, names[i], len))
			return true;
	return false;
}

/* Stars out x's value and Basic form in buf, in place (past each hit:
 * a value made of stars stays as it is). */
static void star_one(const struct gw_secret *x, char *buf, size_t n)
{
	for (char *at = buf, *hit; (hit = memmem(at, n - (size_t)(at - buf), x->s.value, x->s.value_len));
	     at = hit + x->s.value_len)
		memset(hit, '*', x->s.value_len);
	for (char *at = buf, *hit;
	     x->basic_value && (hit = memmem(at, n - (size_t)(at - buf), x->basic_value, x->basic_value_len));
	     at = hit + x->basic_value_len)
		memset(hit, '*', x->basic_value_len);
}

/* Appends src (len) to dst with each from replaced by to; false when
 * cap is reached. */
static bool put_swapped(char *dst, size_t *at, size_t cap, const char *src, size_t len, const char *from, size_t flen,
			const char *to, size_t tlen)
{
	for (const char *hit; flen && (hit = memmem(src, len, from, flen));) {
		size_t lead = (size_t)(hit - src);
		if (*at + lead + tlen > cap)
			return false;
		memcpy(dst + *at, src, lead);
		memcpy(dst + *at + lead, to, tlen);
		*at += lead + tlen;
		len -= lead + flen;
		src = hit + flen;
	}
	if (*at + len > cap)
		return false;
	memcpy(dst + *at, src, len);
	*at += len;
	return true;
}

/* Where a head line's maskable part starts: after the status code on the
 * status line, after the colon of a field that is not framing; len (none)
 * otherwise. */
static size_t maskable_from(const char *line, size_t len, bool status)
{
	if (status) {
		const char *sp = memchr(line, ' ', len);
		sp = sp ? memchr(sp + 1, ' ', len - (size_t)(sp + 1 - line)) : NULL;
		return sp ? (size_t)(sp - line) : len;
	}
	const char *colon = memchr(line, ':', len);
	return !colon || framing(line, (size_t)(colon - line)) ? len : (size_t)(colon - line) + 1;
}

/* One bound secret's texts swapped in src (len) into dst. */
static bool swap_secret(const struct gw_secret *x, char *dst, size_t *at, size_t cap, char *tmp, const char *src,
			size_t len)
{
	size_t t = 0;
	if (!put_swapped(tmp, &t, cap, src, len, x->s.value, x->s.value_len, x->placeholder, x->ph_len))
		return false;
	return x->basic_value ? put_swapped(dst, at, cap, tmp, t, x->basic_value, x->basic_value_len,
					    x->basic_placeholder, x->basic_placeholder_len)
			      : put_swapped(dst, at, cap, tmp, t, "", 0, "", 0);
}

void gw_secrets_mask(const struct gw_secrets *s, const char *host, int port, char *out, size_t *n, size_t cap)
{
	/* Called for a secret's host only: the buffers serve each bound
	 * secret in turn (without them, values are starred out in place). */
	char *dst = malloc(cap), *tmp = malloc(cap);
	for (int i = 0; i < s->n; i++) {
		const struct gw_secret *x = &s->v[i];
		if (!sbx_secret_host_matches(&x->s, host, port))
			continue;
		size_t at = 0;
		bool ok = dst && tmp;
		for (size_t from = 0; ok && from < *n;) {
			const char *line = out + from, *eol = memmem(line, *n - from, "\r\n", 2);
			size_t len = eol ? (size_t)(eol - line) : *n - from, keep = maskable_from(line, len, from == 0);
			ok = put_swapped(dst, &at, cap, line, keep, "", 0, "", 0) &&
			     swap_secret(x, dst, &at, cap, tmp, line + keep, len - keep) &&
			     put_swapped(dst, &at, cap, line + len, eol ? 2 : 0, "", 0, "", 0);
			from += len + (eol ? 2 : 0);
		}
		if (ok) {
			memcpy(out, dst, at);
			*n = at;
		} else {
			/* No room for a longer placeholder: starred out in place, the
			 * framing fields left as they are. */
			for (size_t from = 0; from < *n;) {
				char *line = out + from, *eol = memmem(line, *n - from, "\r\n", 2);
				size_t len = eol ? (size_t)(eol - line) : *n - from, keep = maskable_from(line, len, from == 0);
				star_one(x, line + keep, len - keep);
				from += len + (eol ? 2 : 0);
			}
		}
	}
	if (dst)
		OPENSSL_cleanse(dst, cap);
	if (tmp)
		OPENSSL_cleanse(tmp, cap);
	free(dst);
	free(tmp);
}

void gw_secrets_star(const struct gw_secrets *s, const char *host, int port, char *buf, size_t n)
{
	for (int i = 0; i < s->n; i++)
		if (sbx_secret_host_matches(&s->v[i].s, host, port))
			star_one(&s->v[i], buf, n);
}

size_t gw_secrets_longest(const struct gw_secrets *s, const char *host, int port)
{
	size_t longest = 0;
	for (int i = 0; s && i < s->n; i++)
		if (sbx_secret_host_matches(&s->v[i].s, host, port)) {
			if (s->v[i].s.value_len > longest)
				longest = s->v[i].s.value_len;
			if (s->v[i].basic_value_len > longest)
				longest = s->v[i].basic_value_len;
		}
	return longest;
}
