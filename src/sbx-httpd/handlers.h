/* handlers.h — the execution endpoints: POST /execute(-shell) answered
 * now (execute.c), managed shell executions recorded in SQLite
 * (managed.c) and streamed as Server-Sent Events (sse.c). */
#ifndef SBX_HTTPD_HANDLERS_H
#define SBX_HTTPD_HANDLERS_H

#include "reply.h"

#include <stdbool.h>

enum MHD_Result handle_execute(struct req *r, bool shell);
enum MHD_Result handle_managed_start(struct req *r);
enum MHD_Result handle_managed_get(struct req *r, const char *id);
enum MHD_Result handle_managed_logs(struct req *r, const char *id);
enum MHD_Result handle_managed_cancel(struct req *r, const char *id);
enum MHD_Result handle_managed_events(struct req *r, const char *id);

#endif
