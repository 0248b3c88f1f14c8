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

/* Loads every named secret with its value (before the gateway drops its
 * privilege), makes the run's CA and writes its certificate. */
int gw_secrets_load(struct gw_secrets *s, const struct gw_secrets_options *o, struct sbx_error *e);

/* Whether a secret is bound to host:port: its connections are intercepted. */
bool gw_secrets_bound(const struct gw_secrets *s, const char *host, int port);

/* The first secret whose placeholder appears in bytes (as is, or in the
 * Basic credentials of an Authorization field when head) that may not go
 * to host:port over this connection (host NULL: may go nowhere, as over
 * plain HTTP or in a CONNECT head). NULL when none. */
const struct gw_secret *gw_secrets_misplaced(const struct gw_secrets *s, const char *bytes, size_t n, bool head,
					     const char *host, int port);
/* Writes the refusal's reason: the secret, and the hosts it may go to. */
void gw_secrets_refusal(const struct gw_secret *x, bool over_tls, char *reason, size_t size);

/* Rewrites an outgoing request head (out, *n of cap) for host:port: each
 * bound secret's placeholder becomes its value, its configured field is
 * added when absent. -1 when the result would exceed cap. */
int gw_secrets_inject(const struct gw_secrets *s, const char *host, int port, char *out, size_t *n, size_t cap);
/* Rewrites a response head for the client: a bound secret's value echoed
 * back becomes its placeholder again. */
void gw_secrets_mask(const struct gw_secrets *s, const char *host, int port, char *out, size_t *n, size_t cap);

#endif
