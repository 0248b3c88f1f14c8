/* object_store.h — a job's calls to S3-compatible object storage through
 * grants the control plane signed: a capped GET, a DELETE and a PUT on
 * presigned URLs, and a POST-policy upload streamed from an fd and hashed
 * as it is sent. 5xx, 429 and connection errors are retried with backoff.
 * A URL carries its signature: messages name only scheme, host and path. */
#ifndef SBX_OBJECT_STORE_H
#define SBX_OBJECT_STORE_H

#include "curl_dl.h"
#include "../lib/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sbx_store {
	const struct sbx_curl *c;
	long long deadline_ms; /* sbx_mono_ms() past which no transfer starts or goes on (0: none) */
	int attempts;          /* tries per call (5) */
	int backoff_ms;        /* the first wait before a retry, doubled each time (200) */
	/* Polled during transfers and waits: may move deadline_ms nearer
	 * (sbx-run's SIGTERM from the platform does). */
	void (*poll)(struct sbx_store *s, void *arg);
	void *poll_arg;
	unsigned retried;      /* attempts that were retried, over all calls */
};

/* Loads libcurl; 0 or -1 (infra). */
int sbx_store_init(struct sbx_store *s, struct sbx_error *e);

/* https anywhere, plain http only to a loopback host (127.0.0.0/8, ::1,
 * localhost); no user info. The error names field (exit 2). */
int sbx_store_url_check(const struct sbx_curl *c, const char *url, const char *field, struct sbx_error *e);

/* GET into memory, at most cap bytes (NUL-ended). A 404 is code
 * "not-found"; every failure is infra. */
char *sbx_store_get(struct sbx_store *s, const char *url, size_t cap, size_t *len, struct sbx_error *e);
int sbx_store_delete(struct sbx_store *s, const char *url, struct sbx_error *e);
int sbx_store_put(struct sbx_store *s, const char *url, const char *body, size_t len, const char *type,
		  struct sbx_error *e);

/* A POST-policy upload: the grant's fields in their order ("${filename}"
 * in the key field replaced by name), then size bytes of fd as the file.
 * sha256 is the hex digest of exactly what was sent; key the object key. */
int sbx_store_post_file(struct sbx_store *s, const char *url, const json_t *fields, const char *name, int fd,
			uint64_t size, char sha256[65], char **key, struct sbx_error *e);

#endif
