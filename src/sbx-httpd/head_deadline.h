/* head_deadline.h — a request head not whole within CONNECTION_IDLE_S
 * seconds is cut. */
#ifndef SBX_HTTPD_HEAD_DEADLINE_H
#define SBX_HTTPD_HEAD_DEADLINE_H

#include <microhttpd.h>
#include <stdbool.h>

void head_watch_open(struct MHD_Connection *conn, void **socket_context);
void head_watch_close(void *socket_context);
void head_watch_mark(struct MHD_Connection *conn, bool in_head);
void head_watch_start(void);

#endif
