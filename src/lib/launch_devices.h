/* launch_devices.h — the launch spec's `devices` member (sbx-npu(1)
 * prints it): device nodes bound onto bwrap's fresh /dev, read-only
 * paths, and the environment the devices' user space needs. */
#ifndef SBX_LAUNCH_DEVICES_H
#define SBX_LAUNCH_DEVICES_H

#include "error.h"
#include "strvec.h"

#include <jansson.h>
#include <stdbool.h>

#define SBX_DEVICE_NODES_MAX 128
#define SBX_DEVICE_PATHS_MAX 64

struct sbx_launch_devices {
	bool present;
	struct sbx_strvec node_hosts, node_sandbox; /* --dev-bind host sandbox */
	struct sbx_strvec read_only;                /* --ro-bind path path */
	struct sbx_strvec env_keys, env_values;
	char *path_prefix;                          /* PATH=<prefix>:<base>, or NULL */
};

/* Validates doc (null or absent: no devices). Errors name devices.<field>. */
int sbx_launch_devices_parse(const json_t *doc, struct sbx_launch_devices *d, struct sbx_error *e);
void sbx_launch_devices_free(struct sbx_launch_devices *d);
/* Existing canonical absolute paths clear of the launch's own mounts (at
 * most 64), appended to out; errors name field[i]. Null or absent: none. */
int sbx_launch_read_only_paths(const json_t *paths, const char *field, struct sbx_strvec *out, struct sbx_error *e);

#endif
