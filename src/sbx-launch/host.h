/* host.h — what of the host a sandbox may see: /etc/alternatives,
 * fonts, CA certificates, and the host interpreters a managed environment
 * must mask. Scanned fresh for each launch (a few stat calls). */
#ifndef SBX_LAUNCH_HOST_H
#define SBX_LAUNCH_HOST_H

#include "../lib/error.h"
#include "../lib/strvec.h"

#include <limits.h>
#include <stdbool.h>

#define SBX_LAUNCH_READ_ONLY_MAX 32

struct sbx_launch_host {
	bool alternatives;           /* /etc/alternatives exists */
	bool fonts;                  /* /etc/fonts exists */
	char ca_dir[PATH_MAX];       /* first hashed CA directory, "" none */
	char ca_bundle[PATH_MAX];    /* first CA bundle file, "" none */
	bool ca_bundle_in_dir;       /* the bundle lies inside ca_dir */
	struct sbx_strvec masks;     /* resolved host interpreters to hide */
	char egress_bridge[PATH_MAX]; /* sbx-egress-bridge beside this program, "" none */
	char report[PATH_MAX];        /* sbx-report beside this program, "" none */
	char report_python[PATH_MAX]; /* <prefix>/share/sbx/python (sbx_report.py), "" none */
	char notify[PATH_MAX];        /* sbx-seccomp-notify beside this program, "" none */
	/* Each opened by the launcher before it drops privileges, bound by fd
	 * (-1: none): nothing in the sandbox is reached by a host path. */
	int egress_bridge_fd;
	int report_fd;
	int report_python_fd;
	int egress_socket_fd;
	int notify_fd;
	int trust_fd;                /* the run's CA bundle (host bundle + gateway CA), a memfd; -1 none */
	int read_only_fd[SBX_LAUNCH_READ_ONLY_MAX]; /* devices.readOnly, then readOnlyPaths */
	size_t n_read_only;
};

/* Where the worker channel's helpers appear inside a sandbox that has one:
 * sbx-report on PATH (appended: the workload's own tools come first) and
 * the Python module sbx_report on PYTHONPATH. */
#define SBX_REPORT_BIN_DIR "/run/sbx/bin"
#define SBX_REPORT_PYTHON_DIR "/run/sbx/python"

/* The port the egress bridge listens on inside the sandbox. */
#define SBX_EGRESS_PORT "18118"

/* with_masks: also list python, python3, python3.N, R, Rscript in /usr/bin
 * and /usr/local/bin, resolved (never the symlink itself: binding onto a
 * symlink fails on hosts using /etc/alternatives), de-duplicated, sorted. */
void sbx_launch_host_scan(bool with_masks, struct sbx_launch_host *h);
/* Finds the bridge for a domain-allowlist launch; -1 (and why) without one. */
int sbx_launch_host_find_bridge(struct sbx_launch_host *h, struct sbx_error *e);
/* Finds sbx-seccomp-notify for a launch that reports denials. */
int sbx_launch_host_find_notify(struct sbx_launch_host *h, struct sbx_error *e);
/* Where it appears inside the sandbox, and the fds it is given there. */
#define SBX_NOTIFY_PATH "/run/sbx/notify/sbx-seccomp-notify"
/* Finds sbx-report (static, like the bridge) and its Python module for a
 * launch with a worker channel; -1 (and why) without sbx-report. */
int sbx_launch_host_find_report(struct sbx_launch_host *h, struct sbx_error *e);
/* Opens each path (as the caller wrote it, once), appended to read_only_fd;
 * the error names field. */
int sbx_launch_host_open_read_only(struct sbx_launch_host *h, const struct sbx_strvec *paths, const char *field,
				   struct sbx_error *e);
/* Opens the egress gateway's socket (never through a symlink). */
int sbx_launch_host_open_socket(struct sbx_launch_host *h, const char *path, struct sbx_error *e);
/* The sandbox's trust bundle: the host's bundle and the gateway's per-run
 * CA (a PEM file opened without following a symlink, 64 KiB at most) in
 * one memfd. */
int sbx_launch_host_open_trust(struct sbx_launch_host *h, const char *ca, struct sbx_error *e);
/* Where the bundle appears inside the sandbox. */
#define SBX_TRUST_BUNDLE "/run/sbx/ca-bundle.pem"

/* Frees the masks and closes the helpers' fds. */
void sbx_launch_host_free(struct sbx_launch_host *h);

#endif
