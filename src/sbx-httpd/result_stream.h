/* result_stream.h — an execution's JSON answer with stdout and stderr
 * streamed from sbx-run's files, escaped on the fly: any output size, the
 * memory of one block. */
#ifndef SBX_HTTPD_RESULT_STREAM_H
#define SBX_HTTPD_RESULT_STREAM_H

#include <jansson.h>
#include <microhttpd.h>

/* rest: the result without stdout and stderr (taken); fds[0] stdout,
 * fds[1] stderr (taken, closed when the response is done). Chunked:
 * the size is known only once every byte is escaped. */
struct MHD_Response *result_stream_response(json_t *rest, const int fds[2]);

#endif
