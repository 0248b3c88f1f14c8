/* launch_env.h — which environment variables a launch spec may set: a name
 * grammar, the keys the launch sets itself, the ones that change how a
 * loader or shell behaves, and size caps. */
#ifndef SBX_LAUNCH_ENV_H
#define SBX_LAUNCH_ENV_H

#include "error.h"

#include <stddef.h>

#define SBX_ENV_VALUE_MAX (32u * 1024)
#define SBX_ENV_TOTAL_MAX (256u * 1024)

/* 0 when a spec may set NAME; otherwise -1 and an error naming env.NAME. */
int sbx_env_name_allowed(const char *name, struct sbx_error *e);

#endif
