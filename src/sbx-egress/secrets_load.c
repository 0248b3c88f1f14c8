/* secrets_load.c — the run's secrets in its gateway: each value read from
 * the store before the drop with the forms it is sent in, the run's CA,
 * and the context that verifies the real hosts. */
#include "secrets.h"
#include "mint.h"
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
	if (gw_secret_prepare(x) != 0) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "no-memory", "%s", "the gateway is out of memory");
		return -1;
	}
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

/* base64 of user:text, on a secret buffer. */
static char *basic_of(const char *user, const char *text, size_t len, size_t *out_len)
{
	size_t ul = strlen(user), n = ul + 1 + len;
	char *creds = sbx_secret_buffer(n + 1), *b64 = sbx_secret_buffer((n + 2) / 3 * 4 + 1);
	if (!creds || !b64) {
		sbx_secret_buffer_free(creds, n + 1);
		sbx_secret_buffer_free(b64, (n + 2) / 3 * 4 + 1);
		return NULL;
	}
	memcpy(creds, user, ul);
	creds[ul] = ':';
	memcpy(creds + ul + 1, text, len);
	*out_len = (size_t)EVP_EncodeBlock((unsigned char *)b64, (unsigned char *)creds, (int)n);
	sbx_secret_buffer_free(creds, n + 1);
	return b64;
}

int gw_secret_prepare(struct gw_secret *x)
{
	if (x->s.inject != SBX_SECRET_BASIC)
		return 0;
	x->basic_value = basic_of(x->s.basic_user, x->s.value, x->s.value_len, &x->basic_value_len);
	x->basic_placeholder = basic_of(x->s.basic_user, x->placeholder, x->ph_len, &x->basic_placeholder_len);
	return x->basic_value && x->basic_placeholder ? 0 : -1;
}
