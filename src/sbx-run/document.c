/* document.c — the run document's schema and checks; the signing key
 * is decoded into the struct and wiped from the JSON. */
#include "document.h"
#include "../lib/base64.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "object_store.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRANT_FIELDS_MAX 64
#define GRANT_VALUE_MAX 16384
#define URL_MAX 16384

static const struct sbx_json_field root_fields[] = {
	{ "runId", SBX_JSON_STRING, true, false },
	{ "nonce", SBX_JSON_STRING, true, false },
	{ "request", SBX_JSON_OBJECT, true, false },
	{ "signingKey", SBX_JSON_STRING, true, false },
	{ "deadlineMs", SBX_JSON_INTEGER, false, false },
	{ "deadlineReserveMs", SBX_JSON_INTEGER, false, false },
	{ "caps", SBX_JSON_OBJECT, false, false },
	{ "bootstrapDeleteUrl", SBX_JSON_STRING, true, false },
	{ "uploads", SBX_JSON_OBJECT, true, false },
	{ "image", SBX_JSON_STRING, false, false },
};
static const struct sbx_json_field upload_fields[] = {
	{ "outputs", SBX_JSON_OBJECT, true, false },
	{ "media", SBX_JSON_OBJECT, true, false },
	{ "checkpoints", SBX_JSON_OBJECT, false, false },
	{ "manifest", SBX_JSON_OBJECT, true, false },
};
static const struct sbx_json_field grant_fields[] = {
	{ "url", SBX_JSON_STRING, true, false },
	{ "fields", SBX_JSON_OBJECT, true, false },
};
static const struct sbx_json_field put_fields[] = {
	{ "url", SBX_JSON_STRING, true, false },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int bad(struct sbx_error *e, const char *field, const char *what)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-document", "%s: %s", field, what);
	return -1;
}

/* A run id is also a directory and key name: [A-Za-z0-9._-], 1-128, no leading dot. */
static bool good_run_id(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 128 || s[0] == '.')
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

int sbx_run_document_claim(json_t *doc, const char *run_id, const char *nonce, const char **delete_url,
			   struct sbx_error *e)
{
	const char *id = json_string_value(json_object_get(doc, "runId"));
	const char *n = json_string_value(json_object_get(doc, "nonce"));
	*delete_url = json_string_value(json_object_get(doc, "bootstrapDeleteUrl"));
	if (!json_is_object(doc) || !id || !n)
		return bad(e, "runId", "the run document must be an object with runId and nonce strings");
	size_t a = strlen(n), b = strlen(nonce);
	/* Constant-time over the expected length; a length difference fails too. */
	int differs = a != b;
	differs |= CRYPTO_memcmp(n, nonce, a < b ? a : b) != 0;
	if (strcmp(id, run_id) || differs) {
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "bootstrap-mismatch",
			      "the run document names another run or nonce than MAPI_RUN_ID and MAPI_NONCE");
		sbx_error_remedy(e, "the bootstrap URL points at another run's document; it was left in place");
		return -1;
	}
	if (!*delete_url)
		return bad(e, "bootstrapDeleteUrl", "required: a presigned DELETE URL of the bootstrap object");
	return 0;
}

static int check_url(const struct sbx_curl *c, const char *url, const char *field, struct sbx_error *e)
{
	if (strlen(url) > URL_MAX)
		return bad(e, field, "longer than 16384 bytes");
	return sbx_store_url_check(c, url, field, e);
}

static int parse_grant(json_t *g, const struct sbx_curl *c, const char *where, struct sbx_post_grant *out,
		       struct sbx_error *e)
{
	char path[96];
	const char *name;
	json_t *value;
	if (!g)
		return 0;
	if (sbx_json_validate(g, grant_fields, N(grant_fields), where, e) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s.url", where);
	out->url = json_string_value(json_object_get(g, "url"));
	if (check_url(c, out->url, path, e) != 0)
		return -1;
	out->fields = json_object_get(g, "fields");
	snprintf(path, sizeof(path), "%s.fields", where);
	if (json_object_size(out->fields) > GRANT_FIELDS_MAX)
		return bad(e, path, "at most 64 fields");
	json_object_foreach(out->fields, name, value) {
		if (!json_is_string(value) || json_string_length(value) > GRANT_VALUE_MAX || strlen(name) > 128 ||
		    !strcmp(name, "file") || !*name)
			return bad(e, path, "every field a string of at most 16384 bytes, named (at most 128 bytes), none named file");
	}
	const char *key = json_string_value(json_object_get(out->fields, "key"));
	if (!key || !strstr(key, "${filename}"))
		return bad(e, path, "key: required, with ${filename} where each file's path goes");
	return 0;
}

int sbx_run_document_parse(json_t *doc, const struct sbx_curl *c, struct sbx_run_document *d, struct sbx_error *e)
{
	memset(d, 0, sizeof(*d));
	d->doc = json_incref(doc);
	d->reserve_ms = -1;
	if (sbx_json_validate(doc, root_fields, N(root_fields), "", e) != 0)
		return -1;
	d->run_id = json_string_value(json_object_get(doc, "runId"));
	if (!good_run_id(d->run_id))
		return bad(e, "runId", "1 to 128 of [A-Za-z0-9._-], not starting with '.'");
	/* The key, decoded, then gone from the JSON. */
	json_t *key = json_object_get(doc, "signingKey");
	size_t klen = json_string_length(key);
	unsigned char *raw = malloc(klen / 4 * 3 + 3);
	size_t n = 0;
	bool ok = raw && sbx_base64_decode(json_string_value(key), klen, raw, &n) && n >= SBX_KEY_MIN && n <= SBX_KEY_MAX;
	if (ok)
		memcpy(d->key, raw, n);
	if (raw)
		OPENSSL_cleanse(raw, klen / 4 * 3 + 3);
	free(raw);
	OPENSSL_cleanse((char *)json_string_value(key), klen);
	json_object_del(doc, "signingKey");
	if (!ok)
		return bad(e, "signingKey", "canonical base64 of 16 to 1024 bytes");
	d->key_len = n;
	json_t *v;
	if ((v = json_object_get(doc, "deadlineMs"))) {
		d->deadline_ms = json_integer_value(v);
		if (d->deadline_ms < 1 || d->deadline_ms > 86400000LL * 30)
			return bad(e, "deadlineMs", "1 to 2592000000 (30 days)");
	}
	if ((v = json_object_get(doc, "deadlineReserveMs"))) {
		d->reserve_ms = json_integer_value(v);
		if (d->reserve_ms < 0 || d->reserve_ms > 3600000)
			return bad(e, "deadlineReserveMs", "0 to 3600000");
	}
	d->image = json_string_value(json_object_get(doc, "image"));
	if (d->image && strlen(d->image) > 512)
		return bad(e, "image", "at most 512 bytes");
	d->delete_url = json_string_value(json_object_get(doc, "bootstrapDeleteUrl"));
	if (check_url(c, d->delete_url, "bootstrapDeleteUrl", e) != 0)
		return -1;
	json_t *up = json_object_get(doc, "uploads");
	if (sbx_json_validate(up, upload_fields, N(upload_fields), "uploads", e) != 0 ||
	    parse_grant(json_object_get(up, "outputs"), c, "uploads.outputs", &d->outputs, e) != 0 ||
	    parse_grant(json_object_get(up, "media"), c, "uploads.media", &d->media, e) != 0 ||
	    parse_grant(json_object_get(up, "checkpoints"), c, "uploads.checkpoints", &d->checkpoints, e) != 0 ||
	    sbx_json_validate(json_object_get(up, "manifest"), put_fields, N(put_fields), "uploads.manifest", e) != 0)
		return -1;
	d->manifest_url = json_string_value(json_object_get(json_object_get(up, "manifest"), "url"));
	if (check_url(c, d->manifest_url, "uploads.manifest.url", e) != 0)
		return -1;
	/* The request runs as this run: its id is the run id, its caps the document's. */
	d->request = json_object_get(doc, "request");
	const char *exec_id = json_string_value(json_object_get(d->request, "executionId"));
	if (json_object_get(d->request, "executionId") && (!exec_id || strcmp(exec_id, d->run_id)))
		return bad(e, "request.executionId", "must be absent or equal to runId");
	json_object_set_new(d->request, "executionId", json_string(d->run_id));
	if ((v = json_object_get(doc, "caps"))) {
		if (json_object_get(d->request, "caps"))
			return bad(e, "caps", "given twice: in the document and in request.caps");
		json_object_set(d->request, "caps", v);
	}
	return 0;
}

void sbx_run_document_free(struct sbx_run_document *d)
{
	OPENSSL_cleanse(d->key, sizeof(d->key));
	json_decref(d->doc);
	memset(d, 0, sizeof(*d));
}
