/* result_stream.c — the callback behind result_stream_response: the
 * result's JSON up to its closing brace, then "stdout" and "stderr" read
 * from their files a block at a time and escaped, then the brace. */
#include "result_stream.h"
#include "connections.h"
#include "../lib/clock.h"
#include "json_escape.h"

#include <jansson.h>
#include <stdint.h>
#include <microhttpd.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_BLOCK 32768
#define WHOLE_MAX (256u << 10) /* outputs this small: one buffer with a Content-Length */
/* A reader slower than this after CONNECTION_IDLE_S is cut: the answer's
 * files (unlinked, still open) hold disk while it is read. */
#define READ_MIN_RATE (64u << 10)

enum part { PREFIX, STDOUT, MIDDLE, STDERR, SUFFIX, DONE };

struct stream {
	enum part part;
	char *prefix;                   /* the rest's JSON without its '}' */
	int fds[2];
	struct sbx_json_escaper esc;
	char in[READ_BLOCK];
	char out[SBX_JSON_ESCAPE_BOUND(READ_BLOCK) + 32];
	size_t out_len, out_off;        /* what is escaped and not yet sent */
	long long started_ms;
	unsigned long long sent;
};

static void put(struct stream *s, const char *text)
{
	size_t n = strlen(text);
	memcpy(s->out + s->out_len, text, n);
	s->out_len += n;
}

/* Fills out with the next piece: false on a read error. */
static bool produce(struct stream *s)
{
	s->out_len = s->out_off = 0;
	switch (s->part) {
	case PREFIX:
		put(s, ",\"stdout\":\"");
		s->part = STDOUT;
		return true;
	case STDOUT:
	case STDERR: {
		int fd = s->fds[s->part == STDERR];
		ssize_t n = read(fd, s->in, sizeof(s->in));
		if (n < 0 && errno == EINTR)
			return true;
		if (n < 0)
			return false;
		s->out_len = sbx_json_escape(&s->esc, s->in, (size_t)n, n == 0, s->out);
		if (n == 0) {
			put(s, s->part == STDOUT ? "\",\"stderr\":\"" : "\"}\n");
			s->part = s->part == STDOUT ? STDERR : DONE;
		}
		return true;
	}
	default:
		s->part = DONE;
		return true;
	}
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct stream *s = cls;
	if (s->prefix) { /* the JSON before the outputs goes first, whole */
		size_t n = strlen(s->prefix + s->out_off);
		if (n > max)
			n = max;
		memcpy(buf, s->prefix + s->out_off, n);
		s->out_off += n;
		if (!s->prefix[s->out_off]) {
			free(s->prefix);
			s->prefix = NULL;
			s->out_off = 0;
		}
		return (ssize_t)n;
	}
	long long elapsed = sbx_mono_ms() - s->started_ms;
	if (elapsed > CONNECTION_IDLE_S * 1000LL && s->sent < (unsigned long long)(elapsed / 1000) * READ_MIN_RATE)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	while (s->out_off == s->out_len) {
		if (s->part == DONE)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (!produce(s))
			return MHD_CONTENT_READER_END_WITH_ERROR; /* the client sees a cut, never a wrong body */
	}
	size_t n = s->out_len - s->out_off < max ? s->out_len - s->out_off : max;
	memcpy(buf, s->out + s->out_off, n);
	s->out_off += n;
	s->sent += n;
	return (ssize_t)n;
}

static void release(void *cls)
{
	struct stream *s = cls;
	free(s->prefix);
	for (int i = 0; i < 2; i++)
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	free(s);
}

/* Small outputs: the same bytes composed at once (no chunked framing, one
 * write for the whole answer). */
static struct MHD_Response *whole(struct stream *s, size_t inputs)
{
	size_t cap = strlen(s->prefix) + SBX_JSON_ESCAPE_BOUND(inputs) + 64, len = 0;
	char *body = malloc(cap);
	ssize_t n = 0;
	while (body && (n = reader(s, len, body + len, cap - len)) > 0)
		len += (size_t)n;
	release(s);
	if (!body || n != MHD_CONTENT_READER_END_OF_STREAM) {
		free(body);
		return NULL;
	}
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp)
		free(body);
	return resp;
}

struct MHD_Response *result_stream_response(json_t *rest, const int fds[2])
{
	struct stream *s = calloc(1, sizeof(*s));
	char *text = json_dumps(rest, JSON_COMPACT);
	json_decref(rest);
	size_t n = text ? strlen(text) : 0;
	if (!s || n < 3 || text[n - 1] != '}') {
		free(s);
		free(text);
		for (int i = 0; i < 2; i++)
			close(fds[i]);
		return NULL;
	}
	text[n - 1] = '\0';
	s->prefix = text;
	s->part = PREFIX;
	s->started_ms = sbx_mono_ms();
	s->fds[0] = fds[0];
	s->fds[1] = fds[1];
	struct stat st[2];
	if (fstat(fds[0], &st[0]) == 0 && fstat(fds[1], &st[1]) == 0 &&
	    (uint64_t)st[0].st_size + (uint64_t)st[1].st_size <= WHOLE_MAX)
		return whole(s, (size_t)(st[0].st_size + st[1].st_size));
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, reader, s, release);
	if (!resp)
		release(s);
	return resp;
}
