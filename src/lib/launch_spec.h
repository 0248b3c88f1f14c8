/* launch_spec.h — a launch spec (sbx-formats(5)) parsed and validated
 * completely: every path resolved, every field checked, before anything
 * on the host is touched. */
#ifndef SBX_LAUNCH_SPEC_H
#define SBX_LAUNCH_SPEC_H

#include "error.h"
#include "launch_devices.h"
#include "seccomp_table.h"
#include "strvec.h"

#include <jansson.h>
#include <stdbool.h>

#define SBX_TMP_SIZE_DEFAULT (1ll << 30)
#define SBX_TMP_SIZE_MIN (1ll << 20)
#define SBX_TMP_SIZE_MAX (1ll << 40)

struct sbx_launch_spec {
	struct sbx_strvec argv;
	char *workspace;         /* realpath, or NULL */
	char *ro_parent;         /* realpath of readOnlyWorkspace, or NULL */
	char *ws_mount;          /* "/workspace" or "/workspace/<rel>" */
	char *parent_mount;      /* "/workspace", "/parent_workspace" or NULL */
	char *cwd;               /* inside the sandbox */
	char *cwd_host;          /* its host realpath (NULL without a workspace) */
	struct sbx_strvec env_keys, env_values; /* the spec's env, in its order */
	char *env_prefix;        /* realpath of environment.prefix, or NULL */
	char *scratch;           /* realpath of scratch (bound at /scratch), or NULL */
	char *skills_root;       /* a skill package, read-only at /skills, or NULL */
	char *skills_ext;        /* its extensions (in the workspace) at /skill-extensions */
	char *egress_socket;     /* domain-allowlist: the gateway's socket, or NULL */
	struct sbx_launch_devices devices; /* accelerators (sbx-npu's fragment) */
	bool channel;            /* the worker channel is on fd 5: SBX_CHANNEL_FD */
	long long tmp_size;
	enum sbx_seccomp_profile profile;
};

/* Parses and validates; on failure the error names the field (exit 2). */
int sbx_launch_spec_parse(const json_t *doc, struct sbx_launch_spec *spec, struct sbx_error *e);
void sbx_launch_spec_free(struct sbx_launch_spec *spec);

#endif
