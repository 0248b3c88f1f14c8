/* reply.h — one request being answered and every reply: compact JSON plus
 * a newline with the spec's headers, errors as {"error": message}. */
#ifndef SBX_HTTPD_REPLY_H
#define SBX_HTTPD_REPLY_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <sys/types.h>

struct upload;

/* A reply made on a request's own thread, queued by the connection's
 * poll thread once the connection is resumed (connections.c). */
struct reply_slot {
	unsigned status;
	struct MHD_Response *resp;
};

/* One request, its body read whole (or refused as too large). */
struct req {
	struct MHD_Connection *conn;
	const char *method, *path;
	char *body;
	size_t len;
	bool too_large;
	struct upload *upload;       /* PUT /remote-workspace/(transfer-)file */
	struct reply_slot *slot;     /* NULL: queue the reply at once */
	char run_done[40];           /* a handler's run, let go once its answer is on its way */
	int run_done_pid;            /* and its sbx-run */
	bool run_done_reaped;        /* already waited for */
};

/* Replies. Every body is compact JSON plus a newline with the spec's
 * headers; errors are {"error": message}. */
enum MHD_Result reply_json(struct req *r, unsigned status, json_t *body);
enum MHD_Result reply_error(struct req *r, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *query(struct req *r, const char *name);
/* Queues resp (then released) with the spec's headers and this type. */
enum MHD_Result reply_response(struct req *r, unsigned status, struct MHD_Response *resp, const char *type);
/* Raw bytes from fd (closed when sent), application/octet-stream. */
enum MHD_Result reply_file(struct req *r, int fd, off_t size);
const char *header(struct req *r, const char *name);
/* Whether the client has gone (its socket closed). */
bool client_gone(struct req *r);

#endif
