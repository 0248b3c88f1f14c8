/* metrics_listen.h — GET /metrics on a listener of its own
 * (SBX_METRICS_LISTEN; metrics_listen.c). */
#ifndef SBX_HTTPD_METRICS_LISTEN_H
#define SBX_HTTPD_METRICS_LISTEN_H

#include <microhttpd.h>

/* Serves listen_fd on a thread of its own; NULL when it cannot. */
struct MHD_Daemon *metrics_listen_start(int listen_fd);

#endif
