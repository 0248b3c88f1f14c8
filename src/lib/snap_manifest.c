/* snap_manifest.c — a scan's canonical manifest (entries sorted by path,
 * fixed key order, compact JSON), streamed through SHA-256 into a file or
 * nowhere: never held whole in memory, refused past its cap. */
#include "snap_store.h"
#include "exitcodes.h"
#include "hash.h"
#include "io.h"
#include "json.h"
#include "snap_scan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_BUF (64 * 1024)

struct out {
	int fd;                 /* -1: hashed only */
	struct sbx_sha256 *md;
	uint64_t total, cap;
	size_t len;
	bool over, failed;
	char buf[OUT_BUF];
};

static void flush(struct out *o)
{
	if (o->len && o->fd >= 0 && !o->failed && sbx_write_all(o->fd, o->buf, o->len) != 0)
		o->failed = true;
	o->len = 0;
}

static void put(struct out *o, const char *s, size_t n)
{
	if (o->over || o->failed)
		return;
	if (n > o->cap - o->total) {
		o->over = true; /* nothing past the cap is hashed or written */
		return;
	}
	o->total += n;
	sbx_sha256_update(o->md, s, n);
	while (n) {
		size_t room = OUT_BUF - o->len, k = n < room ? n : room;
		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
		if (o->len == OUT_BUF)
			flush(o);
	}
}

static void put_str(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* A JSON string, escaped as jansson's compact output does; bytes that are
 * not UTF-8 go through jansson's lossy path (U+FFFD). */
static void put_json_string(struct out *o, const char *s)
{
	put(o, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		const unsigned char *run = p;
		while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
			p++;
		put(o, (const char *)run, (size_t)(p - run));
		if (!*p)
			break;
		if (*p >= 0x80) {
			json_t *v = sbx_json_string_lossy((const char *)p);
			char *dumped = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			if (dumped)
				put(o, dumped + 1, strlen(dumped) - 2);
			else
				o->failed = true;
			free(dumped);
			json_decref(v);
			break;
		}
		char esc[8];
		switch (*p) {
		case '"': put(o, "\\\"", 2); break;
		case '\\': put(o, "\\\\", 2); break;
		case '\n': put(o, "\\n", 2); break;
		case '\t': put(o, "\\t", 2); break;
		case '\r': put(o, "\\r", 2); break;
		case '\b': put(o, "\\b", 2); break;
		case '\f': put(o, "\\f", 2); break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04X", *p);
			put_str(o, esc);
		}
		p++;
	}
	put(o, "\"", 1);
}

int sbx_snap_manifest_write(const struct sbx_snap_scan *s, int fd, uint64_t cap, char digest[72], uint64_t *size,
			    uint64_t *files, uint64_t *bytes, struct sbx_error *e)
{
	struct out *o = malloc(sizeof(*o));
	char num[64];

	*files = *bytes = *size = 0;
	if (!o || !(o->md = sbx_sha256_new())) {
		free(o);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "building the manifest");
		return -1;
	}
	o->fd = fd;
	o->total = o->len = 0;
	o->cap = cap;
	o->over = o->failed = false;
	put_str(o, "{\"mediaType\":\"" SBX_SNAP_MEDIA_TYPE "\",\"entries\":[");
	for (size_t i = 0; i < s->len && !o->over && !o->failed; i++) {
		const struct sbx_snap_entry *x = &s->v[i];
		put_str(o, i ? ",{\"path\":" : "{\"path\":");
		put_json_string(o, x->path);
		if (x->type == SBX_ENTRY_FILE) {
			put_str(o, x->exec ? ",\"type\":\"file\",\"exec\":true,\"size\":" : ",\"type\":\"file\",\"exec\":false,\"size\":");
			snprintf(num, sizeof(num), "%" PRIu64, x->size);
			put_str(o, num);
			put_str(o, ",\"digest\":\"");
			put_str(o, x->digest);
			put_str(o, "\"}");
			(*files)++;
			*bytes += x->size;
		} else if (x->type == SBX_ENTRY_SYMLINK) {
			put_str(o, ",\"type\":\"symlink\",\"target\":");
			put_json_string(o, x->target);
			put_str(o, "}");
		} else {
			put_str(o, ",\"type\":\"dir\"}");
		}
	}
	put_str(o, "]}");
	flush(o);
	int rc = 0;
	if (o->over) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "manifest-too-large",
			      "the workspace's manifest (%zu entries) is larger than the %llu bytes a manifest may have "
			      "(--max-manifest-bytes): no snapshot was recorded",
			      s->len, (unsigned long long)cap);
		rc = -1;
	} else if (o->failed) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "store-write", "writing the manifest: %s", strerror(errno ? errno : EIO));
		rc = -1;
	}
	memcpy(digest, "sha256:", 7);
	sbx_sha256_final(o->md, digest + 7);
	*size = o->total;
	free(o);
	return rc;
}
