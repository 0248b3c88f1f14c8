/* secrets.c — the run's secrets in its gateway: loaded with their values
 * before the drop, found by placeholder in what a request carries, put in
 * place of their placeholders for their own hosts, masked in what comes
 * back. */
#include "secrets.h"
#include "mint.h"
#include "../lib/base64.h"
#include "../lib/exitcodes.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define BASIC_MAX 6144 /* decoded Basic credentials examined */

static int bad(struct sbx_error *e, const char *spec, const char *why)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-secret", "--secret %.80s: %s", spec, why);
	return -1;
}

static bool placeholder_ok(const char *p)
{
	size_t n = strlen(p);
	if (n < 16 || n >= GW_PLACEHOLDER_MAX)
		return false;
	for (; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
			return false;
	return true;
}

/* A host entry's DNS name for the CA's constraints: no "*." and no port. */
static void constraint_name(const char *entry, char *out, size_t size)
{
	const char *from = !strncmp(entry, "*.", 2) ? entry + 2 : entry;
	size_t len = strcspn(from, ":");
	snprintf(out, size, "%.*s", (int)len, from);
}

static int load_one(struct gw_secrets *s, int dirfd, const char *spec, struct sbx_error *e)
{
	char name[128];
	const char *eq = strchr(spec, '=');
	if (!eq || (size_t)(eq - spec) >= sizeof(name))
		return bad(e, spec, "expects NAME=PLACEHOLDER");
	snprintf(name, sizeof(name), "%.*s", (int)(eq - spec), spec);
	if (!placeholder_ok(eq + 1))
		return bad(e, spec, "a placeholder is 16 to 127 letters, digits, '_' and '-'");
	if (s->n == GW_MAX_SECRETS)
		return bad(e, spec, "at most 32 secrets");
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].s.name, name) || strstr(s->v[i].placeholder, eq + 1) || strstr(eq + 1, s->v[i].placeholder))
			return bad(e, spec, "names a secret or a placeholder twice");
	struct gw_secret *x = &s->v[s->n];
	if (sbx_secret_load(dirfd, name, true, &x->s, e) != 0)
		return -1;
	snprintf(x->placeholder, sizeof(x->placeholder), "%s", eq + 1);
	x->ph_len = strlen(x->placeholder);
	s->n++;
	return 0;
}

static SSL_CTX *upstream_ctx(const char *extra_ca, struct sbx_error *e)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_default_verify_paths(ctx) != 1 ||
	    (extra_ca && SSL_CTX_load_verify_locations(ctx, extra_ca, NULL) != 1)) {
		SSL_CTX_free(ctx);
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-trust", "%s%s: cannot load the certificates to verify hosts with",
			      extra_ca ? "--upstream-ca " : "the system's trust store", extra_ca ? extra_ca : "");
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	return ctx;
}

int gw_secrets_load(struct gw_secrets *s, const struct gw_secrets_options *o, struct sbx_error *e)
{
	memset(s, 0, sizeof(*s));
	if (!o->store)
		return bad(e, o->specs[0], "needs --secrets-dir");
	int dirfd = sbx_secret_store_open(o->store, false, e);
	if (dirfd < 0)
		return -1;
	int rc = 0;
	for (int i = 0; i < o->n_specs && rc == 0; i++)
		rc = load_one(s, dirfd, o->specs[i], e);
	close(dirfd);
	if (rc != 0)
		return -1;
	static char names[GW_MAX_SECRETS * SBX_SECRET_MAX_HOSTS][262];
	const char *list[GW_MAX_SECRETS * SBX_SECRET_MAX_HOSTS];
	int n = 0;
	for (int i = 0; i < s->n; i++)
		for (int k = 0; k < s->v[i].s.n_hosts; k++) {
			constraint_name(s->v[i].s.hosts[k], names[n], sizeof(names[n]));
			list[n] = names[n];
			n++;
		}
	if (!(s->mint = mint_new(list, n, e)) || (o->ca_out && mint_write_ca(s->mint, o->ca_out, e) != 0) ||
	    !(s->upstream = upstream_ctx(o->upstream_ca, e)))
		return -1;
	return 0;
}

bool gw_secrets_bound(const struct gw_secrets *s, const char *host, int port)
{
	for (int i = 0; s && i < s->n; i++)
		if (sbx_secret_host_matches(&s->v[i].s, host, port))
			return true;
	return false;
}

/* Decoded Basic credentials of the field value v (len), into out. */
static bool basic_credentials(const char *v, size_t len, unsigned char *out, size_t *out_len)
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
	return len / 4 * 3 <= BASIC_MAX && sbx_base64_decode(v, len, out, out_len);
}

/* Whether the placeholder is in the Basic credentials of an
 * Authorization or Proxy-Authorization field of the head bytes. */
static bool in_basic(const char *p, size_t n, const struct gw_secret *x)
{
	static const char *const fields[] = { "\nauthorization:", "\nproxy-authorization:" };
	unsigned char creds[BASIC_MAX];
	for (size_t f = 0; f < 2; f++) {
		size_t flen = strlen(fields[f]);
		for (size_t at = 0; at + flen <= n; at++) {
			if (strncasecmp(p + at, fields[f], flen) != 0)
				continue;
			const char *v = p + at + flen, *end = memchr(v, '\r', n - (size_t)(v - p));
			size_t len = end ? (size_t)(end - v) : n - (size_t)(v - p), got;
			bool hit = basic_credentials(v, len, creds, &got) && memmem(creds, got, x->placeholder, x->ph_len);
			OPENSSL_cleanse(creds, sizeof(creds));
			if (hit)
				return true;
		}
	}
	return false;
}

const struct gw_secret *gw_secrets_misplaced(const struct gw_secrets *s, const char *bytes, size_t n, bool head,
					     const char *host, int port)
{
	for (int i = 0; s && i < s->n; i++) {
		const struct gw_secret *x = &s->v[i];
		if (host && sbx_secret_host_matches(&x->s, host, port))
			continue;
		if (memmem(bytes, n, x->placeholder, x->ph_len) || (head && in_basic(bytes, n, x)))
			return x;
	}
	return NULL;
}

void gw_secrets_refusal(const struct gw_secret *x, bool over_tls, char *reason, size_t size)
{
	size_t at = (size_t)snprintf(reason, size,
				     "Sandbox network access refused a request carrying the placeholder of secret %s, "
				     "which may be sent only to ",
				     x->s.name);
	for (int k = 0; k < x->s.n_hosts && at < size; k++)
		at += (size_t)snprintf(reason + at, size - at, "%s%s", k ? ", " : "", x->s.hosts[k]);
	if (at < size)
		snprintf(reason + at, size - at, " over HTTPS%s", over_tls ? "" : " (never in clear text)");
}

/* Appends len bytes to the buffer being built; false when it is full. */
static bool put(char *dst, size_t *at, size_t cap, const void *src, size_t len)
{
	if (*at + len > cap)
		return false;
	memcpy(dst + *at, src, len);
	*at += len;
	return true;
}

/* Appends src with every occurrence of from replaced by to. */
static bool put_replaced(char *dst, size_t *at, size_t cap, const char *src, size_t len, const char *from,
			 size_t from_len, const char *to, size_t to_len)
{
	const char *hit;
	while (from_len && (hit = memmem(src, len, from, from_len))) {
		if (!put(dst, at, cap, src, (size_t)(hit - src)) || !put(dst, at, cap, to, to_len))
			return false;
		len -= (size_t)(hit - src) + from_len;
		src = hit + from_len;
	}
	return put(dst, at, cap, src, len);
}

/* The configured field's value: its format with the secret in "{}". */
static bool put_format(char *dst, size_t *at, size_t cap, const struct gw_secret *x)
{
	const char *f = x->s.header_format, *slot = strstr(f, "{}");
	return put_replaced(dst, at, cap, f, strlen(f), "{}", 2, x->s.value, slot ? x->s.value_len : 0);
}

/* Base64 of user:value for a Basic field. */
static bool put_basic(char *dst, size_t *at, size_t cap, const unsigned char *creds, size_t len)
{
	if (*at + (len + 2) / 3 * 4 + 1 > cap)
		return false;
	*at += (size_t)EVP_EncodeBlock((unsigned char *)dst + *at, creds, (int)len);
	return true;
}

/* One field of an outgoing head, rewritten for the secrets bound here. */
static bool inject_field(const struct gw_secrets *s, const bool *bound, bool *present, const char *name, size_t nlen,
			 const char *v, size_t vlen, char *dst, size_t *at, size_t cap)
{
	unsigned char creds[BASIC_MAX], swapped[BASIC_MAX + 4096];
	size_t got, sw = 0;
	bool ok = put(dst, at, cap, name, nlen) && put(dst, at, cap, ": ", 2);
	if (nlen == 13 && !strncasecmp(name, "authorization", 13) && basic_credentials(v, vlen, creds, &got)) {
		/* Basic credentials: the placeholder inside them is swapped, then
		 * the credentials encoded again. */
		memcpy(swapped, creds, got);
		sw = got;
		for (int i = 0; i < s->n; i++) {
			if (!bound[i])
				continue;
			if (s->v[i].s.inject == SBX_SECRET_BASIC || !strcmp(s->v[i].s.header_name, "authorization"))
				present[i] = true;
			size_t out = 0;
			unsigned char tmp[sizeof(swapped)];
			if (!put_replaced((char *)tmp, &out, sizeof(tmp), (char *)swapped, sw, s->v[i].placeholder,
					  s->v[i].ph_len, s->v[i].s.value, s->v[i].s.value_len))
				ok = false;
			memcpy(swapped, tmp, out);
			sw = out;
			OPENSSL_cleanse(tmp, sizeof(tmp));
		}
		ok = ok && put(dst, at, cap, "Basic ", 6) && put_basic(dst, at, cap, swapped, sw);
		OPENSSL_cleanse(creds, sizeof(creds));
		OPENSSL_cleanse(swapped, sizeof(swapped));
		return ok && put(dst, at, cap, "\r\n", 2);
	}
	/* Any other field: first the secret configured for this field name
	 * (a value that is just the placeholder takes the whole format), then
	 * every bound placeholder anywhere in it. */
	char *work = malloc(cap), *next = malloc(cap);
	size_t wl = 0;
	ok = ok && work && next && put(work, &wl, cap, v, vlen);
	for (int i = 0; ok && i < s->n; i++) {
		const struct gw_secret *x = &s->v[i];
		if (!bound[i] || strlen(x->s.inject == SBX_SECRET_HEADER ? x->s.header_name : "authorization") != nlen ||
		    strncasecmp(x->s.inject == SBX_SECRET_HEADER ? x->s.header_name : "authorization", name, nlen) != 0)
			continue;
		present[i] = true;
		if (x->s.inject != SBX_SECRET_HEADER)
			continue;
		if (wl == x->ph_len && !memcmp(work, x->placeholder, wl)) {
			wl = 0;
			ok = put_format(work, &wl, cap, x);
		}
	}
	for (int i = 0; ok && i < s->n; i++) {
		size_t nl = 0;
		if (!bound[i])
			continue;
		ok = put_replaced(next, &nl, cap, work, wl, s->v[i].placeholder, s->v[i].ph_len, s->v[i].s.value,
				  s->v[i].s.value_len);
		char *t = work;
		work = next, next = t;
		wl = nl;
	}
	ok = ok && put(dst, at, cap, work, wl) && put(dst, at, cap, "\r\n", 2);
	if (work)
		OPENSSL_cleanse(work, cap);
	if (next)
		OPENSSL_cleanse(next, cap);
	free(work);
	free(next);
	return ok;
}

/* The field a bound secret adds to a request that lacks it. */
static bool add_field(const struct gw_secret *x, char *dst, size_t *at, size_t cap)
{
	if (x->s.inject == SBX_SECRET_HEADER)
		return put(dst, at, cap, x->s.header_name, strlen(x->s.header_name)) && put(dst, at, cap, ": ", 2) &&
		       put_format(dst, at, cap, x) && put(dst, at, cap, "\r\n", 2);
	unsigned char creds[256 + SBX_SECRET_VALUE_MAX + 2];
	size_t ul = strlen(x->s.basic_user);
	memcpy(creds, x->s.basic_user, ul);
	creds[ul] = ':';
	memcpy(creds + ul + 1, x->s.value, x->s.value_len);
	bool ok = put(dst, at, cap, "Authorization: Basic ", 21) && put_basic(dst, at, cap, creds, ul + 1 + x->s.value_len) &&
		  put(dst, at, cap, "\r\n", 2);
	OPENSSL_cleanse(creds, sizeof(creds));
	return ok;
}

int gw_secrets_inject(const struct gw_secrets *s, const char *host, int port, char *out, size_t *n, size_t cap)
{
	bool bound[GW_MAX_SECRETS] = { false }, present[GW_MAX_SECRETS] = { false };
	for (int i = 0; i < s->n; i++)
		bound[i] = sbx_secret_host_matches(&s->v[i].s, host, port);
	char *dst = malloc(cap);
	const char *p = out, *end = out + *n;
	const char *eol = memmem(p, *n, "\r\n", 2);
	size_t at = 0;
	bool ok = dst && eol && put(dst, &at, cap, p, (size_t)(eol - p) + 2);
	for (p = eol ? eol + 2 : end; ok && p < end && !(end - p >= 2 && p[0] == '\r' && p[1] == '\n');) {
		eol = memmem(p, (size_t)(end - p), "\r\n", 2);
		const char *colon = eol ? memchr(p, ':', (size_t)(eol - p)) : NULL;
		if (!colon) {
			ok = false;
			break;
		}
		const char *v = colon + 1;
		while (v < eol && (*v == ' ' || *v == '\t'))
			v++;
		ok = inject_field(s, bound, present, p, (size_t)(colon - p), v, (size_t)(eol - v), dst, &at, cap);
		p = eol + 2;
	}
	/* One field per name: of two bound secrets for one field, the first
	 * adds it. */
	for (int i = 0; ok && i < s->n; i++) {
		const char *field = s->v[i].s.inject == SBX_SECRET_HEADER ? s->v[i].s.header_name : "authorization";
		bool added = false;
		for (int k = 0; k < i && !added; k++)
			added = bound[k] && !present[k] &&
				!strcmp(field, s->v[k].s.inject == SBX_SECRET_HEADER ? s->v[k].s.header_name : "authorization");
		if (bound[i] && !present[i] && !added)
			ok = add_field(&s->v[i], dst, &at, cap);
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

void gw_secrets_mask(const struct gw_secrets *s, const char *host, int port, char *out, size_t *n, size_t cap)
{
	char *tmp = malloc(cap);
	for (int i = 0; tmp && i < s->n; i++) {
		const struct gw_secret *x = &s->v[i];
		size_t len = 0;
		if (!sbx_secret_host_matches(&x->s, host, port) || x->s.value_len < 4 ||
		    !memmem(out, *n, x->s.value, x->s.value_len))
			continue;
		if (put_replaced(tmp, &len, cap, out, *n, x->s.value, x->s.value_len, x->placeholder, x->ph_len)) {
			memcpy(out, tmp, len);
			*n = len;
			continue;
		}
		/* No room for the longer placeholder: the value is starred out. */
		for (char *hit; (hit = memmem(out, *n, x->s.value, x->s.value_len));)
			memset(hit, '*', x->s.value_len);
	}
	if (tmp)
		OPENSSL_cleanse(tmp, cap);
	free(tmp);
}
