/* egress_policy.h — the domain allowlist: entry grammar, the policy and
 * its content revision, target (authority) parsing, matching, and the
 * decision up to the vetted addresses a gateway may connect to. */
#ifndef SBX_EGRESS_POLICY_H
#define SBX_EGRESS_POLICY_H

#include "error.h"

#include <jansson.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

#define SBX_EGRESS_MAX_ENTRIES 1000

struct sbx_egress_entry {
	char host[254];   /* without "*." */
	bool wildcard;    /* *.host: below host, never host itself */
	int port;         /* 0: any */
};

struct sbx_egress_policy {
	struct sbx_egress_entry *entries;
	size_t n;
	bool allow_private;
	char revision[17];
};

/* One entry ("example.org", "*.example.org:8443"); the error says why not. */
int sbx_egress_parse_entry(const char *text, struct sbx_egress_entry *out, char *why, size_t size);
/* The policy JSON; a stated revision must equal the recomputed one. */
int sbx_egress_policy_parse(const json_t *doc, struct sbx_egress_policy *p, struct sbx_error *e);
void sbx_egress_policy_free(struct sbx_egress_policy *p);

struct sbx_egress_target {
	char host[254];   /* case-folded, one trailing dot removed */
	int port;
};

/* "host[:port]" of a CONNECT or an absolute-form URL. Returns 0, or the
 * HTTP status to refuse with (400 malformed, 403 an IP literal) and why. */
int sbx_egress_parse_authority(const char *text, int default_port, struct sbx_egress_target *t,
			       char *why, size_t size);

bool sbx_egress_matches(const struct sbx_egress_policy *p, const struct sbx_egress_target *t);

/* A resolver: the addresses of host:port (at most max), or -1 and why. */
typedef int (*sbx_egress_resolver)(const char *host, int port, struct sockaddr_storage *out, int max,
				   char *why, size_t size, void *arg);
int sbx_egress_getaddrinfo(const char *host, int port, struct sockaddr_storage *out, int max, char *why,
			   size_t size, void *arg);

struct sbx_egress_decision {
	bool allowed;
	const char *cause; /* refused: "not-allowed", "unresolved", "special-address"; allowed: NULL */
	char reason[512];
	struct sockaddr_storage vetted[16]; /* every address that passed, in resolver order */
	int n_vetted;
};

/* Allowlist, then resolve, then classify every address; never the name
 * again after this: a gateway connects only to the vetted addresses. */
void sbx_egress_decide(const struct sbx_egress_policy *p, const struct sbx_egress_target *t,
		       sbx_egress_resolver resolve, void *arg, struct sbx_egress_decision *d);

/* Address text for logs and JSON ("127.0.0.1", "::1"). */
void sbx_egress_addr_text(const struct sockaddr_storage *ss, char *out, size_t size);

#endif
