/* reply.c — every answer sbx-httpd sends: compact JSON plus a newline,
 * errors as {"error": message}, raw bytes from an fd, with the spec's
 * headers; and the request's accessors (query, header, client gone). */
#include "reply.h"
#include "metrics.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FILE_BLOCK (256u << 10) /* bytes read per block of a file sent */

enum MHD_Result reply_json(struct req *r, unsigned status, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(body);
	size_t n = text ? strlen(text) : 0;
	char *out = malloc(n + 2);
	if (!out) {
		free(text);
		return MHD_NO;
	}
	memcpy(out, text ? text : "", n);
	out[n++] = '\n';
	free(text);
	struct MHD_Response *resp = MHD_create_response_from_buffer(n, out, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(out);
		return MHD_NO;
	}
	return reply_response(r, status, resp, "application/json; charset=utf-8");
}

enum MHD_Result reply_response(struct req *r, unsigned status, struct MHD_Response *resp, const char *type)
{
	metrics_response(status);
	MHD_add_response_header(resp, "content-type", type);
	MHD_add_response_header(resp, "cache-control", "no-store");
	MHD_add_response_header(resp, "x-content-type-options", "nosniff");
	if (status == 503) { /* a refusal for load: the client retries on a fresh connection */
		MHD_add_response_header(resp, "connection", "close");
		MHD_add_response_header(resp, "retry-after", "1");
	}
	if (r->slot) { /* answered on the request's own thread: queued on resume */
		if (r->slot->resp)
			MHD_destroy_response(r->slot->resp);
		r->slot->status = status;
		r->slot->resp = resp;
		return MHD_YES;
	}
	enum MHD_Result rc = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

enum MHD_Result reply_error(struct req *r, unsigned status, const char *fmt, ...)
{
	char message[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	return reply_json(r, status, json_pack("{s:s}", "error", message));
}

const char *query(struct req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *header(struct req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* Reads the next block of a file being sent; a file that came up short
 * (the workload truncated it meanwhile) ends the response as an error, so
 * the client sees a cut transfer and the connection closes. */
static ssize_t file_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	ssize_t n;
	do
		n = pread((int)(intptr_t)cls, buf, max, (off_t)pos);
	while (n < 0 && errno == EINTR);
	return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void file_close(void *cls)
{
	close((int)(intptr_t)cls);
}

enum MHD_Result reply_file(struct req *r, int fd, off_t size)
{
	/* Not MHD's sendfile response: on a resumed connection it spins when
	 * the file shrinks under it. */
	struct MHD_Response *resp =
		MHD_create_response_from_callback((uint64_t)size, FILE_BLOCK, file_read, (void *)(intptr_t)fd, file_close);
	if (!resp) {
		close(fd);
		return MHD_NO;
	}
	return reply_response(r, 200, resp, "application/octet-stream");
}

bool client_gone(struct req *r)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!info)
		return true;
	struct pollfd p = { .fd = info->connect_fd, .events = POLLIN | POLLRDHUP };
	if (poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLRDHUP | POLLHUP | POLLERR))
		return true;
	char c;
	return recv(info->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}
