/* remote.h — remote workspaces (runner-api 5.7) as sbx-ws children, and
 * the collection of their snapshots. */
#ifndef SBX_HTTPD_REMOTE_H
#define SBX_HTTPD_REMOTE_H

#include "reply.h"

enum MHD_Result handle_remote(struct req *r, const char *what, const char *id);

#endif
