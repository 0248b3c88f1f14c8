/* connections.h — the poll threads and a thread per request being
 * answered; a connection silent CONNECTION_IDLE_S is closed. */
#ifndef SBX_HTTPD_CONNECTIONS_H
#define SBX_HTTPD_CONNECTIONS_H

#include <microhttpd.h>
#include <stdbool.h>

#define CONNECTION_IDLE_S 30
struct MHD_Daemon *server_start(int listen_fd);
unsigned connections_needed_fds(void);

#endif
