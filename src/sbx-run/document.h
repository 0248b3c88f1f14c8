/* document.h — a job's run document (sbx-formats(5)): what the control
 * plane writes to the bootstrap object for one sbx-run, strict and with
 * every secret (key, nonce, signed grants) kept out of messages. */
#ifndef SBX_RUN_DOCUMENT_H
#define SBX_RUN_DOCUMENT_H

#include "curl_dl.h"
#include "../lib/error.h"
#include "event_sign.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SBX_RUN_DOCUMENT_CAP (32u << 20)

/* A POST policy: where to POST and the form fields, in their order. */
struct sbx_post_grant {
	const char *url;    /* NULL: not granted */
	json_t *fields;
};

struct sbx_run_document {
	json_t *doc;
	const char *run_id;
	json_t *request;            /* the execution request, executionId = runId */
	unsigned char key[SBX_KEY_MAX];
	size_t key_len;
	long long deadline_ms;      /* the platform deadline from sbx-run's start (0: none) */
	long long reserve_ms;       /* -1: not given */
	const char *delete_url;
	struct sbx_post_grant outputs, media, checkpoints;
	const char *manifest_url;
	const char *image;          /* recorded in the manifest (NULL: none) */
};

/* Before anything else: the document names this run and nonce (the
 * nonce compared in constant time), and says where to delete it.
 * Integrity (exit 9) on a mismatch, bad input (2) when unreadable. */
int sbx_run_document_claim(json_t *doc, const char *run_id, const char *nonce, const char **delete_url,
			   struct sbx_error *e);

/* The whole document, validated; takes a reference to doc. Unknown
 * fields, wrong kinds and unusable grants are bad input naming the field. */
int sbx_run_document_parse(json_t *doc, const struct sbx_curl *c, struct sbx_run_document *d, struct sbx_error *e);
void sbx_run_document_free(struct sbx_run_document *d);

#endif
