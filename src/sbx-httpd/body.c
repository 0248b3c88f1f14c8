/* body.c — a request's body: its size limit by endpoint, the JSON object
 * it must be, for signed endpoints the signature checked first, and a
 * memfd holding it for a stage's stdin. */
#include "body.h"
#include "auth.h"
#include "reply.h"
#include "server.h"
#include "../lib/io.h"

#include <jansson.h>
#include <microhttpd.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Skill bundles may be 64 MiB; everything else 2,000,000 bytes. */
size_t body_limit(const char *method, const char *url)
{
	return !strcmp(method, "POST") && !strcmp(url, "/skill-packages") ? SKILL_BODY_LIMIT : BODY_LIMIT;
}

size_t request_body_limit(struct req *r)
{
	return body_limit(r->method, r->path);
}

json_t *body_object(struct req *r, enum MHD_Result *sent)
{
	json_error_t err;
	if (r->too_large) {
		*sent = reply_error(r, 400, "Request body exceeds the %zu byte limit", request_body_limit(r));
		return NULL;
	}
	json_t *doc = r->len ? json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, &err) : NULL;
	if (!doc) {
		*sent = reply_error(r, 400, "%s", r->len ? err.text : "Unexpected end of JSON input");
		return NULL;
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		*sent = reply_error(r, 400, "Request body must be a JSON object");
		return NULL;
	}
	return doc;
}

json_t *signed_body(struct req *r, const char *refusal, enum MHD_Result *sent)
{
	if (!r->too_large && !auth_signature(&g_server.cfg, r)) {
		*sent = reply_error(r, 401, "%s", refusal);
		return NULL;
	}
	return body_object(r, sent);
}

int body_memfd(const char *body, size_t len)
{
	int fd = memfd_create("sbx-httpd-body", MFD_CLOEXEC);
	if (fd >= 0 && (sbx_write_all(fd, body, len) != 0 || lseek(fd, 0, SEEK_SET) != 0)) {
		close(fd);
		fd = -1;
	}
	return fd;
}
