/* metrics_text.h — GET /metrics: the Prometheus text exposition (0.0.4)
 * of sbx-httpd's metrics. */
#ifndef SBX_HTTPD_METRICS_TEXT_H
#define SBX_HTTPD_METRICS_TEXT_H

#include "reply.h"

#include <stddef.h>

/* The exposition (the caller frees it), or NULL when out of memory. */
char *metrics_text(size_t *len);
/* 200 with the exposition, text/plain; version=0.0.4. */
enum MHD_Result handle_metrics(struct req *r);

#endif
