/* mint.h — the per-run certificate authority of an intercepting gateway:
 * its key lives only in this process; a leaf per bound host on demand. */
#ifndef SBX_EGRESS_MINT_H
#define SBX_EGRESS_MINT_H

#include "../lib/error.h"

#include <openssl/ssl.h>

struct mint;

/* A fresh CA (P-256, valid from an hour ago for 30 days) whose name
 * constraints permit only the given DNS names and their subdomains. */
struct mint *mint_new(const char *const *names, int n_names, struct sbx_error *e);
/* Writes the CA certificate (PEM, never the key) to a new file, 0644. */
int mint_write_ca(const struct mint *m, const char *path, struct sbx_error *e);
/* A server context presenting a leaf for host, signed by the CA; cached
 * for the gateway's life (the caller frees nothing). NULL on failure or
 * past 256 hosts. Thread-safe. */
SSL_CTX *mint_server_ctx(struct mint *m, const char *host);

#endif
