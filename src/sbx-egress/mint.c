/* mint.c — the per-run CA (key in memory only, name-constrained to the run's
 * bound hosts) and the leaf certificates it signs, one server context per
 * host, cached. */
#include "mint.h"
#include "../lib/exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MINT_CACHE 256
#define CA_DAYS 30

struct mint {
	EVP_PKEY *ca_key, *leaf_key;
	X509 *ca;
	pthread_mutex_t lock;
	int n;
	struct {
		char host[256];
		SSL_CTX *ctx;
	} cache[MINT_CACHE];
};

static int ossl_fail(struct sbx_error *e, const char *what)
{
	char detail[256];
	ERR_error_string_n(ERR_get_error(), detail, sizeof(detail));
	sbx_error_set(e, SBX_EXIT_INTERNAL, "tls-setup", "the gateway cannot %s: %s", what, detail);
	return -1;
}

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	bool ok = ext && X509_add_ext(cert, ext, -1) == 1;
	X509_EXTENSION_free(ext);
	return ok;
}

/* A certificate for key, named cn, valid from an hour ago; issuer NULL:
 * self-signed. Extensions are added by the caller before mint_sign. */
static X509 *cert_new(EVP_PKEY *key, const char *cn, X509 *issuer, int days)
{
	X509 *x = X509_new();
	unsigned char serial[16];
	BIGNUM *bn = NULL;
	bool ok = x && RAND_bytes(serial, sizeof(serial)) == 1;
	if (ok) {
		serial[0] &= 0x7f; /* positive */
		bn = BN_bin2bn(serial, sizeof(serial), NULL);
	}
	X509_NAME *name = X509_NAME_new();
	ok = ok && bn && name && X509_set_version(x, 2) == 1 && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) &&
	     X509_gmtime_adj(X509_getm_notBefore(x), -3600) && X509_gmtime_adj(X509_getm_notAfter(x), 86400L * days) &&
	     X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"sbx egress gateway", -1, -1, 0) &&
	     X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) &&
	     X509_set_subject_name(x, name) == 1 &&
	     X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name) == 1 && X509_set_pubkey(x, key) == 1;
	BN_free(bn);
	X509_NAME_free(name);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

struct mint *mint_new(const char *const *names, int n_names, struct sbx_error *e)
{
	struct mint *m = calloc(1, sizeof(*m));
	if (!m) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "no-memory", "%s", "the gateway is out of memory");
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->ca_key = EVP_EC_gen("P-256");
	m->leaf_key = EVP_EC_gen("P-256");
	if (!m->ca_key || !m->leaf_key) {
		ossl_fail(e, "make a key");
		goto fail;
	}
	unsigned char id[6];
	char cn[64];
	RAND_bytes(id, sizeof(id));
	snprintf(cn, sizeof(cn), "sbx run CA %02x%02x%02x%02x%02x%02x", id[0], id[1], id[2], id[3], id[4], id[5]);
	/* Permitted subtrees: a DNS constraint "example.org" covers the name
	 * and every name below it, which is what "*.example.org" needs too. */
	char constraints[8192];
	size_t at = (size_t)snprintf(constraints, sizeof(constraints), "critical");
	for (int i = 0; i < n_names && at < sizeof(constraints); i++)
		at += (size_t)snprintf(constraints + at, sizeof(constraints) - at, ",permitted;DNS:%s", names[i]);
	m->ca = cert_new(m->ca_key, cn, NULL, CA_DAYS);
	if (!m->ca || at >= sizeof(constraints) || !add_ext(m->ca, m->ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
	    !add_ext(m->ca, m->ca, NID_key_usage, "critical,keyCertSign,cRLSign") ||
	    !add_ext(m->ca, m->ca, NID_subject_key_identifier, "hash") ||
	    (n_names > 0 && !add_ext(m->ca, m->ca, NID_name_constraints, constraints)) ||
	    X509_sign(m->ca, m->ca_key, EVP_sha256()) <= 0) {
		ossl_fail(e, "make its certificate authority");
		goto fail;
	}
	return m;
fail:
	X509_free(m->ca);
	EVP_PKEY_free(m->ca_key);
	EVP_PKEY_free(m->leaf_key);
	free(m);
	return NULL;
}

int mint_write_ca(const struct mint *m, const char *path, struct sbx_error *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	bool ok = f && fchmod(fd, 0644) == 0 && PEM_write_X509(f, m->ca) == 1;
	if (f ? fclose(f) != 0 : (fd >= 0 && close(fd) != 0))
		ok = false;
	if (!ok)
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "--ca-out: %s: %s", path, strerror(errno ? errno : EIO));
	return ok ? 0 : -1;
}

static SSL_CTX *server_ctx(struct mint *m, const char *host)
{
	char san[300];
	snprintf(san, sizeof(san), "DNS:%s", host);
	X509 *leaf = cert_new(m->leaf_key, strlen(host) < 64 ? host : "sbx intercepted host", m->ca, CA_DAYS - 1);
	SSL_CTX *ctx = leaf ? SSL_CTX_new(TLS_server_method()) : NULL;
	bool ok = ctx && add_ext(leaf, m->ca, NID_basic_constraints, "critical,CA:FALSE") &&
		  add_ext(leaf, m->ca, NID_key_usage, "critical,digitalSignature") &&
		  add_ext(leaf, m->ca, NID_ext_key_usage, "serverAuth") && add_ext(leaf, m->ca, NID_subject_alt_name, san) &&
		  add_ext(leaf, m->ca, NID_subject_key_identifier, "hash") &&
		  add_ext(leaf, m->ca, NID_authority_key_identifier, "keyid:always") &&
		  X509_sign(leaf, m->ca_key, EVP_sha256()) > 0 && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
		  SSL_CTX_use_certificate(ctx, leaf) == 1 && SSL_CTX_use_PrivateKey(ctx, m->leaf_key) == 1 &&
		  SSL_CTX_add1_chain_cert(ctx, m->ca) == 1;
	X509_free(leaf);
	if (!ok) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* No ALPN callback: clients fall back to HTTP/1.1, the one the gateway reads. */
	return ctx;
}

SSL_CTX *mint_server_ctx(struct mint *m, const char *host)
{
	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->cache[i].host, host)) {
			SSL_CTX *ctx = m->cache[i].ctx;
			pthread_mutex_unlock(&m->lock);
			return ctx;
		}
	/* Bounded: past MINT_CACHE distinct hosts (a wildcard's many names)
	 * a run's gateway intercepts no new one. */
	SSL_CTX *ctx = m->n < MINT_CACHE && strlen(host) < sizeof(m->cache[0].host) ? server_ctx(m, host) : NULL;
	if (ctx) {
		snprintf(m->cache[m->n].host, sizeof(m->cache[m->n].host), "%s", host);
		m->cache[m->n++].ctx = ctx;
	}
	pthread_mutex_unlock(&m->lock);
	return ctx;
}
