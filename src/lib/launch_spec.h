/* launch_spec.h — a launch spec (sbx-formats(5)) parsed and validated
 * completely: every path resolved, every field checked, before anything
 * on the host is touched. */
#ifndef SBX_LAUNCH_SPEC_H
#define SBX_LAUNCH_SPEC_H

#include "error.h"
#include "host_dir.h"
#include "launch_devices.h"
#include "seccomp_table.h"
#include "strvec.h"

#include <jansson.h>
#include <stdbool.h>

#define SBX_TMP_SIZE_DEFAULT (1ll << 30)
#define SBX_TMP_SIZE_MIN (1ll << 20)
#define SBX_TMP_SIZE_MAX (1ll << 40)
#define SBX_SHM_SIZE_DEFAULT (64ll << 20) /* /dev/shm, as Docker's default */
#define SBX_MAX_PROCESSES_DEFAULT 4096  /* per workload uid (a fork bomb stops there) */
#define SBX_MAX_OPEN_FILES_DEFAULT 4096
#define SBX_ADDRESS_SPACE_MIN (256ll << 20) /* below it bwrap itself may not start */

struct sbx_launch_spec {
	struct sbx_strvec argv;
	/* Every host directory is an fd from here on (fd -1: absent); .path is
	 * its name at the time it was opened, for display and mount points. */
	struct sbx_host_dir workspace;
	struct sbx_host_dir ro_parent;   /* readOnlyWorkspace */
	char *ws_mount;          /* "/workspace" or "/workspace/<rel>" */
	char *parent_mount;      /* "/workspace", "/parent_workspace" or NULL */
	char *cwd;               /* inside the sandbox */
	struct sbx_host_dir cwd_dir; /* the same directory below the workspace fd */
	struct sbx_strvec env_keys, env_values; /* the spec's env, in its order */
	struct sbx_host_dir env_prefix;  /* environment.prefix */
	bool env_writable;       /* environment.writable: an installer's target, read-write */
	char *env_mount;         /* environment.mountPath (writable only), or NULL: the prefix's own path */
	struct sbx_strvec read_only; /* readOnlyPaths: bound read-only at their own paths */
	struct sbx_host_dir scratch;     /* bound at /scratch */
	struct sbx_host_dir skills_root; /* a skill package, read-only at /skills */
	struct sbx_host_dir skills_ext;  /* its extensions, below the workspace fd, at /skill-extensions */
	char *skills_ext_rel;            /* their workspace-relative path */
	/* workspaceOverlay: a directory holding upper/ and work/ (and merged/,
	 * a mount point when not root); the workload then sees the workspace
	 * through an overlay whose changes land in upper/ (sbx-launch(1)). */
	struct sbx_host_dir overlay;
	char *egress_socket;     /* domain-allowlist: the gateway's socket, or NULL */
	char *egress_ca;         /* network.caCertificate: the gateway's per-run CA, or NULL */
	struct sbx_launch_devices devices; /* accelerators (sbx-npu's fragment) */
	bool report_denials;     /* sbx-launch --denials-fd: the reported calls notify the supervisor */
	bool channel;            /* the worker channel is on fd 5: SBX_CHANNEL_FD */
	long long tmp_size;
	long long shm_size;      /* /dev/shm's own tmpfs */
	long long file_size_limit; /* fileSizeLimitBytes: RLIMIT_FSIZE, -1 none */
	long long max_processes;   /* maxProcesses: RLIMIT_NPROC of the workload's uid, 0 none */
	long long max_open_files;  /* maxOpenFiles: RLIMIT_NOFILE, 0 none */
	long long max_address_space; /* maxAddressSpaceBytes: RLIMIT_AS, 0 none */
	enum sbx_seccomp_profile profile;
};

/* Parses and validates; on failure the error names the field (exit 2).
 * Each host directory field is "fd:N" or an absolute path (host_dir.h). */
int sbx_launch_spec_parse(const json_t *doc, struct sbx_launch_spec *spec, struct sbx_error *e);
void sbx_launch_spec_free(struct sbx_launch_spec *spec);

#endif
