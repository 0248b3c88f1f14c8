/* info.h — /health, /status, /resources and /kernels, and who the
 * workloads run as. */
#ifndef SBX_HTTPD_INFO_H
#define SBX_HTTPD_INFO_H

#include "reply.h"
#include "server.h"

enum MHD_Result handle_health(struct req *r);
void info_limits_init(void);
/* Who the workloads run as (the execution_* fields), once at startup. */
void info_execution_identity(struct server *s);
enum MHD_Result handle_status(struct req *r);
enum MHD_Result handle_resources(struct req *r);
enum MHD_Result handle_kernels(struct req *r, const char *kernel_id);

#endif
