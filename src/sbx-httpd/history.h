/* history.h — sbx's extension: a workspace's versions over HTTP (list,
 * diff, restore, fork), by remote key through sbx-ws or by workspaceRoot
 * through sbx-snap on the fd opened here. */
#ifndef SBX_HTTPD_HISTORY_H
#define SBX_HTTPD_HISTORY_H

#include "reply.h"

/* what: "versions", "diff", "restore" or "fork". */
enum MHD_Result handle_history(struct req *r, const char *what);

#endif
