/* npu.h — sbx-broker and sbx-npu behind the NPU endpoints. */
#ifndef SBX_HTTPD_NPU_H
#define SBX_HTTPD_NPU_H

#include "reply.h"

#include <jansson.h>

void npu_start(void);
json_t *npu_capability(void);
json_t *npu_active_jobs(void);
enum MHD_Result handle_npu(struct req *r, const char *what, const char *id);

#endif
