/* secrets.h — the run's secrets as its gateway holds them: each value with
 * the placeholder the sandbox sees in its place, the hosts it may go to,
 * and the TLS contexts that intercept those hosts. */
#ifndef SBX_EGRESS_SECRETS_H
#define SBX_EGRESS_SECRETS_H

#include "../lib/error.h"
#include "../lib/secret_store.h"

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

#define GW_MAX_SECRETS 32
#define GW_PLACEHOLDER_MAX 128

struct gw_secret {
	struct sbx_secret s;
	char placeholder[GW_PLACEHOLDER_MAX];
	size_t ph_len;
	/* SBX_SECRET_BASIC: base64 of basic_user:value as sent, and of
	 * basic_user:placeholder, what an echo of it is masked to. */
	char *basic_value, *basic_placeholder;
	size_t basic_value_len, basic_placeholder_len;
};

struct mint;
struct gw_secrets {
	int n;
	struct gw_secret v[GW_MAX_SECRETS];
	struct mint *mint;    /* the run's CA */
	SSL_CTX *upstream;    /* verifies the real hosts */
};

struct gw_secrets_options {
	const char *store;          /* --secrets-dir */
	const char *specs[GW_MAX_SECRETS]; /* --secret NAME=PLACEHOLDER */
	int n_specs;
	const char *ca_out;         /* --ca-out: the CA certificate, for the sandbox's bundle */
	const char *upstream_ca;    /* --upstream-ca: trusted besides the system's store */
};

/* The forms a secret is sent in (its Basic credentials), once loaded. */
int gw_secret_prepare(struct gw_secret *x);

/* Loads every named secret with its value (before the gateway drops its
 * privilege), makes the run's CA and writes its certificate. */
int gw_secrets_load(struct gw_secrets *s, const struct gw_secrets_options *o, struct sbx_error *e);

/* Whether a secret is bound to host:port: its connections are intercepted. */
bool gw_secrets_bound(const struct gw_secrets *s, const char *host, int port);

/* The decoded credentials of an Authorization value "Basic <base64>"
 * (len bytes at v) into out (GW_BASIC_MAX): false for anything else. */
#define GW_BASIC_MAX 6144
bool gw_basic_decode(const char *v, size_t len, unsigned char *out, size_t *out_len);
/* Whether x's placeholder is exactly the password of decoded credentials. */
bool gw_basic_is_placeholder(const struct gw_secret *x, const unsigned char *creds, size_t len);
/* Whether a field value (len bytes) is x's own form: the placeholder, or
 * the configured format holding it. */
bool gw_field_is_placeholder(const struct gw_secret *x, const char *v, size_t len);

/* secrets_screen.c. The first secret whose placeholder is where it may not
 * go (NULL when none): in bytes of a request head (head: its Basic
 * credentials decoded too) or of a body, bound for host:port (NULL: a
 * CONNECT head or plain HTTP, where no placeholder may go). A secret bound
 * to the host may be in a head only in its own form: the configured field
 * holding just the placeholder or the format with it, or Authorization:
 * Basic credentials whose password is the placeholder (*form is set
 * when that is what was broken); in a body it may be anywhere. */
const struct gw_secret *gw_secrets_misplaced(const struct gw_secrets *s, const char *bytes, size_t n, bool head,
					     const char *host, int port, bool *form);
/* The refusal's reason: the secret, and where it may go. */
void gw_secrets_refusal(const struct gw_secret *x, bool form, bool over_tls, char *reason, size_t size);

/* secrets_inject.c. Rewrites an outgoing request head (out, *n of cap) for
 * host:port, screened first: each bound secret's own field gets its value
 * (Basic credentials as basic_user:value), and is added when the request
 * has no field of that name. -1 when the result would exceed cap. */
int gw_secrets_inject(const struct gw_secrets *s, const char *host, int port, char *out, size_t *n, size_t cap);

/* secrets_mask.c. A response head for the client: in the reason phrase and
 * every field but the framing ones, a bound secret's value (and its Basic
 * form) becomes the placeholder again (starred out without room). */
void gw_secrets_mask(const struct gw_secrets *s, const char *host, int port, char *out, size_t *n, size_t cap);
/* Response body bytes: each bound value and Basic form starred out in
 * place (the length kept: framing holds). */
void gw_secrets_star(const struct gw_secrets *s, const char *host, int port, char *buf, size_t n);
/* The longest text gw_secrets_star looks for at host:port, 0 for none: a
 * stream keeps that many bytes less one back until more come. */
size_t gw_secrets_longest(const struct gw_secrets *s, const char *host, int port);

#endif
