/* secrets_screen.c — where a placeholder may go: to its secret's hosts
 * only, over TLS only, and in a request head only in the secret's own
 * form; anything else is found here, before a byte is forwarded. */
#include "secrets.h"
#include "../lib/base64.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

bool gw_secrets_bound(const struct gw_secrets *s, const char *host, int port)
{
	for (int i = 0; s && i < s->n; i++)
		if (sbx_secret_host_matches(&s->v[i].s, host, port))
			return true;
	return false;
}

bool gw_basic_decode(const char *v, size_t len, unsigned char *out, size_t *out_len)
{
	while (len && (*v == ' ' || *v == '\t'))
		v++, len--;
	if (len < 6 || strncasecmp(v, "basic ", 6) != 0)
		return false;
	v += 6, len -= 6;
	while (len && *v == ' ')
		v++, len--;
	while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	return len / 4 * 3 <= GW_BASIC_MAX && sbx_base64_decode(v, len, out, out_len);
}

bool gw_basic_is_placeholder(const struct gw_secret *x, const unsigned char *creds, size_t len)
{
	const unsigned char *colon = memchr(creds, ':', len);
	return colon && (size_t)(creds + len - colon - 1) == x->ph_len && !memcmp(colon + 1, x->placeholder, x->ph_len);
}

bool gw_field_is_placeholder(const struct gw_secret *x, const char *v, size_t len)
{
	if (len == x->ph_len && !memcmp(v, x->placeholder, len))
		return true;
	const char *f = x->s.header_format, *slot = strstr(f, "{}");
	size_t before = slot ? (size_t)(slot - f) : 0, after = slot ? strlen(slot + 2) : 0;
	return slot && len == before + x->ph_len + after && !memcmp(v, f, before) &&
	       !memcmp(v + before, x->placeholder, x->ph_len) && !memcmp(v + before + x->ph_len, slot + 2, after);
}

static size_t count(const char *p, size_t n, const char *what, size_t len)
{
	size_t k = 0;
	for (const char *at = p, *hit; (hit = memmem(at, n - (size_t)(at - p), what, len)); at = hit + len)
		k++;
	return k;
}

/* Whether every appearance of x's placeholder in the head is in x's own
 * form; *seen when it appears at all. */
static bool head_in_form(const struct gw_secret *x, const char *p, size_t n, bool *seen)
{
	size_t raw = count(p, n, x->placeholder, x->ph_len), allowed = 0;
	bool ok = true;
	unsigned char creds[GW_BASIC_MAX];
	*seen = raw > 0;
	for (const char *line = memmem(p, n, "\r\n", 2); line && ok; line = memmem(line + 2, n - (size_t)(line + 2 - p), "\r\n", 2)) {
		const char *name = line + 2, *end = memmem(name, n - (size_t)(name - p), "\r\n", 2);
		const char *colon = end ? memchr(name, ':', (size_t)(end - name)) : NULL;
		if (!colon)
			break;
		size_t nlen = (size_t)(colon - name), got;
		const char *v = colon + 1;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		size_t vlen = (size_t)(end - v);
		while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			vlen--;
		bool auth = nlen == 13 && !strncasecmp(name, "authorization", 13);
		if (x->s.inject == SBX_SECRET_HEADER && nlen == strlen(x->s.header_name) &&
		    !strncasecmp(name, x->s.header_name, nlen) && gw_field_is_placeholder(x, v, vlen))
			allowed++;
		/* Credentials are screened decoded: the placeholder there only as
		 * the password of the Basic secret's own Authorization. */
		if ((auth || (nlen == 19 && !strncasecmp(name, "proxy-authorization", 19))) &&
		    gw_basic_decode(v, vlen, creds, &got) && memmem(creds, got, x->placeholder, x->ph_len)) {
			*seen = true;
			ok = auth && x->s.inject == SBX_SECRET_BASIC && gw_basic_is_placeholder(x, creds, got);
		}
		OPENSSL_cleanse(creds, sizeof(creds));
	}
	return ok && raw == allowed;
}

const struct gw_secret *gw_secrets_misplaced(const struct gw_secrets *s, const char *bytes, size_t n, bool head,
					     const char *host, int port, bool *form)
{
	*form = false;
	for (int i = 0; s && i < s->n; i++) {
		const struct gw_secret *x = &s->v[i];
		bool bound = host && sbx_secret_host_matches(&x->s, host, port), seen;
		if (!head) {
			if (!bound && memmem(bytes, n, x->placeholder, x->ph_len))
				return x;
			continue;
		}
		bool in_form = head_in_form(x, bytes, n, &seen);
		if (seen && (!bound || !in_form)) {
			*form = bound;
			return x;
		}
	}
	return NULL;
}

void gw_secrets_refusal(const struct gw_secret *x, bool form, bool over_tls, char *reason, size_t size)
{
	size_t at;
	if (form) {
		if (x->s.inject == SBX_SECRET_HEADER)
			snprintf(reason, size,
				 "Sandbox network access refused a request carrying the placeholder of secret %s outside its "
				 "field: it goes only in %s: %s",
				 x->s.name, x->s.header_name, x->s.header_format);
		else
			snprintf(reason, size,
				 "Sandbox network access refused a request carrying the placeholder of secret %s outside its "
				 "place: it goes only as the password of Authorization: Basic credentials",
				 x->s.name);
		return;
	}
	at = (size_t)snprintf(reason, size,
			      "Sandbox network access refused a request carrying the placeholder of secret %s, "
			      "which may be sent only to ",
			      x->s.name);
	for (int k = 0; k < x->s.n_hosts && at < size; k++)
		at += (size_t)snprintf(reason + at, size - at, "%s%s", k ? ", " : "", x->s.hosts[k]);
	if (at < size)
		snprintf(reason + at, size - at, " over HTTPS%s", over_tls ? "" : " (never in clear text)");
}
