/* object_store.c — transfers with libcurl: one attempt per try, retried on
 * what a later try may fix, every wait and transfer bounded by the
 * store's deadline; response bodies are kept only up to a cap. */
#include "object_store.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define ERROR_BODY_CAP 4096
#define CONNECT_TIMEOUT_MS 10000
#define STALL_SECONDS 60 /* under 1 byte/s this long: the attempt failed */

int sbx_store_init(struct sbx_store *s, struct sbx_error *e)
{
	memset(s, 0, sizeof(*s));
	s->attempts = 5;
	s->backoff_ms = 200;
	return (s->c = sbx_curl_load(e)) ? 0 : -1;
}

static bool loopback_host(const char *host)
{
	unsigned char a[16];
	if (!strcmp(host, "localhost") || !strcmp(host, "[::1]"))
		return true;
	return inet_pton(AF_INET, host, a) == 1 && a[0] == 127;
}

int sbx_store_url_check(const struct sbx_curl *c, const char *url, const char *field, struct sbx_error *e)
{
	CURLU *u = c->url();
	char *scheme = NULL, *host = NULL, *user = NULL;
	int rc = -1;
	if (!u || c->url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    c->url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK || c->url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-document", "%s: not a URL", field);
	else if (c->url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK)
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-document", "%s: a URL with user info is refused", field);
	else if (strcmp(scheme, "https") && !(strcmp(scheme, "http") == 0 && loopback_host(host)))
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-document", "%s: must be https (plain http only to loopback), not %s://%s",
			      field, scheme, host);
	else
		rc = 0;
	c->free(scheme);
	c->free(host);
	c->free(user);
	if (u)
		c->url_cleanup(u);
	return rc;
}

/* "METHOD scheme://host/path" without the query, which holds the signature. */
static void describe(const char *method, const char *url, char *out, size_t size)
{
	size_t n = strcspn(url, "?#");
	snprintf(out, size, "%s %.*s", method, (int)(n > 300 ? 300 : n), url);
}

struct sink {
	char *buf;
	size_t len, cap;
	bool over;
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct sink *k = arg;
	size_t len = size * n;
	if (k->len + len > k->cap) {
		k->over = true;
		return 0; /* aborts: nothing past the cap is kept */
	}
	char *grown = realloc(k->buf, k->len + len + 1);
	if (!grown)
		return 0;
	k->buf = grown;
	memcpy(k->buf + k->len, data, len);
	k->len += len;
	k->buf[k->len] = '\0';
	return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct sbx_store *s = arg;
	(void)dt, (void)dn, (void)ut, (void)un;
	if (s->poll)
		s->poll(s, s->poll_arg);
	return s->deadline_ms && sbx_mono_ms() >= s->deadline_ms ? 1 : 0;
}

/* S3's <Code> and <Message> from an error body, else its first line. */
static void s3_reason(const struct sink *k, char *out, size_t size)
{
	const char *code = k->buf ? strstr(k->buf, "<Code>") : NULL, *msg = k->buf ? strstr(k->buf, "<Message>") : NULL;
	if (code) {
		code += 6;
		const char *end = strchr(code, '<');
		int clen = end ? (int)(end - code) : 0;
		const char *mend = msg ? strchr(msg + 9, '<') : NULL;
		snprintf(out, size, "%.*s%s%.*s", clen > 64 ? 64 : clen, code, mend ? ": " : "",
			 mend ? (int)(mend - msg - 9 > 300 ? 300 : mend - msg - 9) : 0, mend ? msg + 9 : "");
	} else {
		size_t n = k->buf ? strcspn(k->buf, "\r\n") : 0;
		snprintf(out, size, "%.*s", (int)(n > 200 ? 200 : n), k->buf ? k->buf : "");
	}
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
}

static bool retryable(CURLcode rc, long status)
{
	if (rc == CURLE_OK)
		return status >= 500 || status == 429;
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR ||
	       rc == CURLE_GOT_NOTHING || rc == CURLE_PARTIAL_FILE || rc == CURLE_COULDNT_RESOLVE_HOST ||
	       rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_OPERATION_TIMEDOUT;
}

/* Waits ms, or until the deadline; false when the deadline came first. */
static bool back_off(struct sbx_store *s, long long ms)
{
	long long until = sbx_mono_ms() + ms;
	for (;;) {
		if (s->poll)
			s->poll(s, s->poll_arg);
		long long now = sbx_mono_ms(), end = s->deadline_ms && s->deadline_ms < until ? s->deadline_ms : until;
		if (now >= end)
			return !(s->deadline_ms && now >= s->deadline_ms);
		poll(NULL, 0, (int)(end - now > 100 ? 100 : end - now));
	}
}

/* One request's setup, made again for every attempt. */
struct request {
	const char *method;
	const char *url;
	int (*prepare)(CURL *h, void *arg, struct sbx_error *e);
	void (*release)(void *arg);
	void *arg;
	struct sink *body; /* the response (capped); NULL: kept only for errors */
};

static int transfer(struct sbx_store *s, struct request *q, struct sbx_error *e)
{
	char what[400], reason[512], errbuf[CURL_ERROR_SIZE];
	const struct sbx_curl *c = s->c;
	long long wait = s->backoff_ms;
	describe(q->method, q->url, what, sizeof(what));
	for (int attempt = 1;; attempt++) {
		struct sink errors = { .cap = ERROR_BODY_CAP }, *k = q->body ? q->body : &errors;
		k->len = 0;
		k->over = false;
		CURL *h = c->easy_init();
		if (!h)
			return sbx_error_set(e, SBX_EXIT_INTERNAL, "store-failed", "%s: libcurl did not start", what), -1;
		errbuf[0] = '\0';
		c->easy_setopt(h, CURLOPT_URL, q->url);
		c->easy_setopt(h, CURLOPT_PROTOCOLS_STR, strncasecmp(q->url, "https:", 6) ? "http" : "https");
		c->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		c->easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
		c->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
		c->easy_setopt(h, CURLOPT_WRITEDATA, k);
		c->easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		c->easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		c->easy_setopt(h, CURLOPT_XFERINFODATA, s);
		c->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
		c->easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		c->easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)STALL_SECONDS);
		if (strncasecmp(q->url, "https:", 6))
			c->easy_setopt(h, CURLOPT_PROXY, ""); /* loopback: never through a proxy */
		int prepared = q->prepare ? q->prepare(h, q->arg, e) : 0;
		CURLcode rc = prepared == 0 ? c->easy_perform(h) : CURLE_ABORTED_BY_CALLBACK;
		long status = 0;
		c->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		c->easy_cleanup(h);
		if (q->release)
			q->release(q->arg);
		if (prepared != 0) {
			free(errors.buf);
			return -1;
		}
		bool late = s->deadline_ms && sbx_mono_ms() >= s->deadline_ms;
		if (rc == CURLE_OK && status >= 200 && status < 300) {
			free(errors.buf);
			return 0;
		}
		if (rc == CURLE_OK)
			s3_reason(k, reason, sizeof(reason));
		else
			snprintf(reason, sizeof(reason), "%s", k->over ? "the answer is larger than allowed"
							   : late ? "the deadline passed"
							   : errbuf[0] ? errbuf : c->easy_strerror(rc));
		if (!k->over && !late && retryable(rc, status) && attempt < s->attempts) {
			free(errors.buf);
			errors.buf = NULL;
			s->retried++;
			if (back_off(s, wait)) {
				wait *= 2;
				continue;
			}
			late = true;
			snprintf(reason, sizeof(reason), "the deadline passed while waiting to retry");
		}
		free(errors.buf);
		if (rc == CURLE_OK)
			sbx_error_set(e, SBX_EXIT_INTERNAL, status == 404 ? "not-found" : "store-refused",
				      "%s: HTTP %ld after %d attempt%s: %s", what, status, attempt, attempt > 1 ? "s" : "",
				      reason[0] ? reason : "no reason given");
		else
			sbx_error_set(e, SBX_EXIT_INTERNAL, late ? "store-deadline" : "store-unreachable",
				      "%s: %s (after %d attempt%s)", what, reason, attempt, attempt > 1 ? "s" : "");
		return -1;
	}
}

char *sbx_store_get(struct sbx_store *s, const char *url, size_t cap, size_t *len, struct sbx_error *e)
{
	struct sink k = { .cap = cap };
	struct request q = { .method = "GET", .url = url, .body = &k };
	if (transfer(s, &q, e) != 0) {
		free(k.buf);
		return NULL;
	}
	*len = k.len;
	return k.buf ? k.buf : calloc(1, 1);
}

static int prepare_delete(CURL *h, void *arg, struct sbx_error *e)
{
	const struct sbx_curl *c = arg;
	(void)e;
	c->easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	return 0;
}

int sbx_store_delete(struct sbx_store *s, const char *url, struct sbx_error *e)
{
	struct request q = { .method = "DELETE", .url = url, .prepare = prepare_delete, .arg = (void *)s->c };
	return transfer(s, &q, e);
}

struct put {
	const struct sbx_curl *c;
	const char *body, *type;
	size_t len, off;
	struct curl_slist *headers;
};

static size_t put_read(char *buf, size_t size, size_t n, void *arg)
{
	struct put *p = arg;
	size_t room = size * n, left = p->len - p->off;
	size_t take = left < room ? left : room;
	memcpy(buf, p->body + p->off, take);
	p->off += take;
	return take;
}

static int prepare_put(CURL *h, void *arg, struct sbx_error *e)
{
	struct put *p = arg;
	char header[160];
	(void)e;
	p->off = 0;
	snprintf(header, sizeof(header), "Content-Type: %s", p->type);
	p->headers = p->c->slist_append(NULL, header);
	p->c->easy_setopt(h, CURLOPT_UPLOAD, 1L);
	p->c->easy_setopt(h, CURLOPT_READFUNCTION, put_read);
	p->c->easy_setopt(h, CURLOPT_READDATA, p);
	p->c->easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)p->len);
	p->c->easy_setopt(h, CURLOPT_HTTPHEADER, p->headers);
	return 0;
}

static void release_put(void *arg)
{
	struct put *p = arg;
	p->c->slist_free_all(p->headers);
	p->headers = NULL;
}

int sbx_store_put(struct sbx_store *s, const char *url, const char *body, size_t len, const char *type,
		  struct sbx_error *e)
{
	struct put p = { .c = s->c, .body = body, .len = len, .type = type };
	struct request q = { .method = "PUT", .url = url, .prepare = prepare_put, .release = release_put, .arg = &p };
	return transfer(s, &q, e);
}

struct post {
	const struct sbx_curl *c;
	const json_t *fields;
	const char *key, *filename;
	int fd;
	uint64_t size, off;
	struct sbx_sha256 *hash;
	bool short_read;
	curl_mime *mime;
};

static size_t post_read(char *buf, size_t size, size_t n, void *arg)
{
	struct post *p = arg;
	size_t room = size * n;
	uint64_t left = p->size - p->off;
	if (left == 0)
		return 0;
	ssize_t got;
	do
		got = pread(p->fd, buf, left < room ? (size_t)left : room, (off_t)p->off);
	while (got < 0 && errno == EINTR);
	if (got <= 0) { /* the file shrank or cannot be read: never send less than said */
		p->short_read = true;
		return CURL_READFUNC_ABORT;
	}
	sbx_sha256_update(p->hash, buf, (size_t)got);
	p->off += (uint64_t)got;
	return (size_t)got;
}

static int post_seek(void *arg, curl_off_t offset, int origin)
{
	struct post *p = arg;
	if (origin != SEEK_SET || offset != 0)
		return CURL_SEEKFUNC_CANTSEEK;
	sbx_sha256_free(p->hash);
	p->hash = sbx_sha256_new();
	p->off = 0;
	return CURL_SEEKFUNC_OK;
}

static int prepare_post(CURL *h, void *arg, struct sbx_error *e)
{
	struct post *p = arg;
	const char *name;
	json_t *value;
	post_seek(p, 0, SEEK_SET);
	p->short_read = false;
	p->mime = p->c->mime_init(h);
	json_object_foreach((json_t *)p->fields, name, value) {
		curl_mimepart *part = p->c->mime_addpart(p->mime);
		const char *v = strcmp(name, "key") ? json_string_value(value) : p->key;
		if (!part || p->c->mime_name(part, name) != CURLE_OK || p->c->mime_data(part, v, CURL_ZERO_TERMINATED) != CURLE_OK)
			return sbx_error_set(e, SBX_EXIT_INTERNAL, "store-failed", "building the form failed"), -1;
	}
	curl_mimepart *file = p->c->mime_addpart(p->mime);
	if (!file || p->c->mime_name(file, "file") != CURLE_OK || p->c->mime_filename(file, p->filename) != CURLE_OK ||
	    p->c->mime_type(file, "application/octet-stream") != CURLE_OK ||
	    p->c->mime_data_cb(file, (curl_off_t)p->size, post_read, post_seek, NULL, p) != CURLE_OK)
		return sbx_error_set(e, SBX_EXIT_INTERNAL, "store-failed", "building the form failed"), -1;
	p->c->easy_setopt(h, CURLOPT_MIMEPOST, p->mime);
	return 0;
}

static void release_post(void *arg)
{
	struct post *p = arg;
	p->c->mime_free(p->mime);
	p->mime = NULL;
}

int sbx_store_post_file(struct sbx_store *s, const char *url, const json_t *fields, const char *name, int fd,
			uint64_t size, char sha256[65], char **key, struct sbx_error *e)
{
	const char *pattern = json_string_value(json_object_get(fields, "key"));
	const char *slot = pattern ? strstr(pattern, "${filename}") : NULL;
	const char *base = strrchr(name, '/');
	*key = NULL;
	if (!slot || asprintf(key, "%.*s%s%s", (int)(slot - pattern), pattern, name, slot + 11) < 0) {
		*key = NULL;
		return sbx_error_set(e, SBX_EXIT_USAGE, "bad-document", "the grant's key field has no ${filename}"), -1;
	}
	struct post p = { .c = s->c, .fields = fields, .key = *key, .filename = base ? base + 1 : name,
			  .fd = fd, .size = size };
	struct request q = { .method = "POST", .url = url, .prepare = prepare_post, .release = release_post, .arg = &p };
	int rc = transfer(s, &q, e);
	if (rc == 0 && (p.short_read || p.off != size)) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "store-failed", "%s: sent %llu of %llu bytes", name,
			      (unsigned long long)p.off, (unsigned long long)size);
		rc = -1;
	}
	if (rc == 0)
		sbx_sha256_final(p.hash, sha256);
	else
		sbx_sha256_free(p.hash);
	if (rc != 0) {
		free(*key);
		*key = NULL;
	}
	return rc;
}
