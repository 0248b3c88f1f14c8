/* route.h — the router: a request to its handler. */
#ifndef SBX_HTTPD_ROUTE_H
#define SBX_HTTPD_ROUTE_H

#include "reply.h"

enum MHD_Result route(struct req *r);

#endif
