/* plan.c — the sandbox, step by step. Order matters to bwrap: every
 * mount point is created before `--remount-ro /` freezes the root. */
#include "plan.h"
#include "../lib/exitcodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCIENCE_ENV "/opt/science-env"
#define EGRESS_DIR "/run/sbx"
#define EGRESS_PROXY "http://127.0.0.1:" SBX_EGRESS_PORT

static void setenv_(struct sbx_launch_plan *p, const char *key, const char *value)
{
	sbx_strvec_push(&p->env_keys, key);
	sbx_strvec_push(&p->env_values, value);
}

/* Baseline first, then the spec's own variables (their names were checked:
 * none of them can override a baseline key). */
static void build_env(const struct sbx_launch_spec *s, const struct sbx_launch_host *h,
		      struct sbx_launch_plan *p)
{
	const struct sbx_launch_devices *d = &s->devices;
	const char *base = s->env_prefix.fd >= 0 && !s->env_writable ? SCIENCE_ENV "/bin:/usr/bin:/bin" : "/usr/bin:/bin";
	char path[1200];

	setenv_(p, "HOME", "/tmp");
	/* Only launches with devices get their tools' directory first; a
	 * channel's sbx-report comes last, after the workload's own tools. */
	snprintf(path, sizeof(path), "%s%s%s%s", d->path_prefix ? d->path_prefix : "", d->path_prefix ? ":" : "", base,
		 s->channel && h->report[0] ? ":" SBX_REPORT_BIN_DIR : "");
	setenv_(p, "PATH", path);
	setenv_(p, "LANG", "C.UTF-8");
	setenv_(p, "PYTHONNOUSERSITE", "1");
	if (h->trust_fd >= 0) {
		/* The run's bundle (the host's and the gateway's per-run CA), for
		 * every client that takes one from the environment. */
		static const char *const keys[] = { "SSL_CERT_FILE",  "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
						     "PIP_CERT",       "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO" };
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			setenv_(p, keys[i], SBX_TRUST_BUNDLE);
	} else if (h->ca_bundle[0]) {
		setenv_(p, "SSL_CERT_FILE", h->ca_bundle);
		setenv_(p, "CURL_CA_BUNDLE", h->ca_bundle);
		setenv_(p, "REQUESTS_CA_BUNDLE", h->ca_bundle);
	}
	if (h->ca_dir[0])
		setenv_(p, "SSL_CERT_DIR", h->ca_dir);
	if (s->scratch.fd >= 0)
		setenv_(p, "SBX_SCRATCH", "/scratch");
	if (s->skills_root.fd >= 0) {
		setenv_(p, "SCIENCEDISCOVERY_SKILLS_DIR", "/skills");
		setenv_(p, "SCIENCEDISCOVERY_SKILL_EXTENSIONS_DIR", "/skill-extensions");
	}
	if (s->channel)
		setenv_(p, "SBX_CHANNEL_FD", "5");

	if (s->egress_socket) {
		/* Every common client, pointed at the bridge; loopback stays direct. */
		static const char *const proxy_keys[] = {
			"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
			"PIP_PROXY", "npm_config_proxy", "npm_config_https_proxy", "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY",
		};
		for (size_t i = 0; i < sizeof(proxy_keys) / sizeof(proxy_keys[0]); i++)
			setenv_(p, proxy_keys[i], EGRESS_PROXY);
		setenv_(p, "NO_PROXY", "localhost,127.0.0.1,::1");
		setenv_(p, "no_proxy", "localhost,127.0.0.1,::1");
		setenv_(p, "GIT_CONFIG_COUNT", "1");
		setenv_(p, "GIT_CONFIG_KEY_0", "http.proxy");
		setenv_(p, "GIT_CONFIG_VALUE_0", EGRESS_PROXY);
	}
	/* The channel's Python module goes after a device toolkit's own path. */
	const char *report_python = s->channel && h->report_python[0] ? SBX_REPORT_PYTHON_DIR : NULL;
	for (size_t i = 0; i < d->env_keys.len; i++) {
		const char *value = d->env_values.items[i];
		if (report_python && !strcmp(d->env_keys.items[i], "PYTHONPATH") && *value) {
			char *joined = NULL;
			if (asprintf(&joined, "%s:%s", value, report_python) < 0) {
				joined = NULL;
				p->env_values.failed = true; /* out of memory: the plan fails */
			} else {
				setenv_(p, "PYTHONPATH", joined);
			}
			free(joined);
			report_python = NULL;
			continue;
		}
		if (report_python && !strcmp(d->env_keys.items[i], "PYTHONPATH"))
			continue; /* empty: ours alone, below */
		setenv_(p, d->env_keys.items[i], d->env_values.items[i]);
	}
	if (report_python)
		setenv_(p, "PYTHONPATH", report_python);
	for (size_t i = 0; i < s->env_keys.len; i++)
		setenv_(p, s->env_keys.items[i], s->env_values.items[i]);
}

static void ro_bind(struct sbx_strvec *a, const char *src, const char *dst)
{
	sbx_strvec_pushl(a, "--ro-bind", src, dst, NULL);
}

/* A host object by its fd: the next slot from SBX_BIND_FD_FIRST. */
static int bind_slot(struct sbx_launch_plan *p, const char *option, int fd, const char *name, const char *dst)
{
	if (p->n_bind == SBX_BIND_FD_MAX || fd < 0)
		return -1;
	p->bind_src[p->n_bind] = fd;
	p->bind_name[p->n_bind] = name;
	p->bind_data[p->n_bind] = !strcmp(option, "--ro-bind-data");
	if (p->bind_data[p->n_bind])
		sbx_strvec_pushl(&p->argv, "--perms", "0444", NULL);
	sbx_strvec_push(&p->argv, option);
	sbx_strvec_pushf(&p->argv, "%d", SBX_BIND_FD_FIRST + (int)p->n_bind++);
	sbx_strvec_push(&p->argv, dst);
	return 0;
}

static int bind_fd(struct sbx_launch_plan *p, const char *option, const struct sbx_host_dir *d, const char *dst)
{
	return bind_slot(p, option, d->fd, d->path, dst);
}

int sbx_launch_plan_build(const struct sbx_launch_spec *s, const struct sbx_sandbox_profile *probe,
			  const struct sbx_launch_host *h, const struct sbx_identity *id,
			  struct sbx_launch_plan *p, struct sbx_error *e)
{
	struct sbx_strvec *a = &p->argv;

	memset(p, 0, sizeof(*p));
	p->ws_slot = p->ext_slot = -1;
	p->overlay_dir = s->overlay.fd;
	p->file_size_limit = s->file_size_limit;
	p->max_processes = s->max_processes;
	p->max_open_files = s->max_open_files;
	p->max_address_space = s->max_address_space;
	sbx_strvec_push(a, probe->bwrap_path);
	/* Namespaces, no capabilities. --new-session keeps TIOCSTI away from
	 * the caller's terminal (seccomp refuses it too). The caller kills the
	 * sandbox by killing bwrap: --die-with-parent takes down the sandbox's
	 * pid 1 and with it the whole pid namespace, which no setsid() inside
	 * can escape (a process-group kill could be). */
	sbx_strvec_pushl(a, "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user", NULL);
	if (probe->disable_userns)
		sbx_strvec_push(a, "--disable-userns");
	sbx_strvec_pushl(a, "--cap-drop", "ALL", NULL);

	/* The read-only system. */
	ro_bind(a, "/usr", "/usr");
	sbx_strvec_pushl(a, "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
			 "--symlink", "usr/lib64", "/lib64", NULL);
	if (h->alternatives)
		ro_bind(a, "/etc/alternatives", "/etc/alternatives");
	if (h->fonts)
		ro_bind(a, "/etc/fonts", "/etc/fonts");
	if (h->ca_dir[0])
		ro_bind(a, h->ca_dir, h->ca_dir);
	if (h->ca_bundle[0] && !h->ca_bundle_in_dir)
		ro_bind(a, h->ca_bundle, h->ca_bundle);
	int binds = bind_slot(p, "--ro-bind-data", id->passwd_fd, "(generated passwd)", "/etc/passwd");
	binds |= bind_slot(p, "--ro-bind-data", id->group_fd, "(generated group)", "/etc/group");

	/* Kernel views. bwrap covers /proc/sys, sysrq-trigger, irq and bus only
	 * when the caller could write them, so they are bound read-only here
	 * for every uid (sysctl contents follow the reader's namespaces, not
	 * the procfs instance). The fallback binds all of /proc read-only. */
	if (probe->proc_bind) {
		ro_bind(a, "/proc", "/proc");
	} else {
		sbx_strvec_pushl(a, "--proc", "/proc", NULL);
		ro_bind(a, "/proc/sys", "/proc/sys");
		sbx_strvec_pushl(a, "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
				 "--ro-bind-try", "/proc/irq", "/proc/irq", "--ro-bind-try", "/proc/bus", "/proc/bus", NULL);
	}
	/* /dev: bwrap's nodes on a tmpfs that is made read-only below, and a
	 * /dev/shm of its own size (an unsized one would take half the RAM). */
	sbx_strvec_pushl(a, "--dev", "/dev", "--size", NULL);
	sbx_strvec_pushf(a, "%lld", s->shm_size);
	sbx_strvec_pushl(a, "--tmpfs", "/dev/shm", NULL);
	/* Accelerators: only the chosen nodes land on the fresh /dev (binding
	 * the host's /dev would expose every chip). */
	for (size_t i = 0; i < s->devices.node_hosts.len; i++)
		sbx_strvec_pushl(a, "--dev-bind", s->devices.node_hosts.items[i], s->devices.node_sandbox.items[i], NULL);

	/* A managed environment hides the host's interpreters. */
	for (size_t i = 0; i < h->masks.len; i++)
		ro_bind(a, "/dev/null", h->masks.items[i]);
	sbx_strvec_push(a, "--size");
	sbx_strvec_pushf(a, "%lld", s->tmp_size);
	sbx_strvec_pushl(a, "--tmpfs", "/tmp", NULL);
	/* The devices' files, after /tmp exists so a tool kept there shows. */
	size_t k = 0;
	const struct sbx_strvec *lists[] = { &s->devices.read_only, &s->read_only };
	for (size_t l = 0; l < 2; l++)
		for (size_t i = 0; i < lists[l]->len; i++, k++)
			binds |= k < h->n_read_only ? bind_slot(p, "--ro-bind-fd", h->read_only_fd[k], lists[l]->items[i],
								lists[l]->items[i])
						    : -1;
	if (s->env_prefix.fd >= 0 && s->env_writable) {
		/* An installer's target: read-write where conda will find it. */
		binds |= bind_fd(p, "--bind-fd", &s->env_prefix, s->env_mount ? s->env_mount : s->env_prefix.path);
	} else if (s->env_prefix.fd >= 0) {
		/* Twice: conda embeds the absolute prefix in scripts and libraries. */
		binds |= bind_fd(p, "--ro-bind-fd", &s->env_prefix, SCIENCE_ENV);
		if (strcmp(s->env_prefix.path, SCIENCE_ENV) != 0)
			binds |= bind_fd(p, "--ro-bind-fd", &s->env_prefix, s->env_prefix.path);
	}

	/* The workspace, under its read-only parent when there is one. */
	if (s->ro_parent.fd >= 0)
		binds |= bind_fd(p, "--ro-bind-fd", &s->ro_parent, s->parent_mount);
	if (s->workspace.fd >= 0) {
		p->ws_slot = (int)p->n_bind;
		binds |= bind_fd(p, "--bind-fd", &s->workspace, s->ws_mount);
	}
	/* The worker's scratch: checkpoints, media and outputs. */
	if (s->scratch.fd >= 0)
		binds |= bind_fd(p, "--bind-fd", &s->scratch, "/scratch");

	/* Skills: the package read-only, the workspace's extensions writable. */
	if (s->skills_root.fd >= 0) {
		binds |= bind_fd(p, "--ro-bind-fd", &s->skills_root, "/skills");
		p->ext_slot = (int)p->n_bind;
		binds |= bind_fd(p, "--bind-fd", &s->skills_ext, "/skill-extensions");
	}

	/* The worker channel's helpers: the static sbx-report and its Python
	 * module, read-only. */
	if (s->channel && h->report_fd >= 0)
		binds |= bind_slot(p, "--ro-bind-fd", h->report_fd, h->report, SBX_REPORT_BIN_DIR "/sbx-report");
	if (s->channel && h->report_python_fd >= 0)
		binds |= bind_slot(p, "--ro-bind-fd", h->report_python_fd, h->report_python, SBX_REPORT_PYTHON_DIR);

	/* Denials: the static program that loads the notifying filter. */
	if (s->report_denials)
		binds |= bind_slot(p, "--ro-bind-fd", h->notify_fd, h->notify, SBX_NOTIFY_PATH);

	/* Egress: the static bridge and the gateway's socket, nothing else. */
	if (s->egress_socket) {
		binds |= bind_slot(p, "--ro-bind-fd", h->egress_bridge_fd, h->egress_bridge, EGRESS_DIR "/egress-bridge");
		binds |= bind_slot(p, "--bind-fd", h->egress_socket_fd, s->egress_socket, EGRESS_DIR "/egress.sock");
		if (h->trust_fd >= 0)
			binds |= bind_slot(p, "--ro-bind-data", h->trust_fd, "(run trust bundle)", SBX_TRUST_BUNDLE);
	}

	/* Freeze the root: only /tmp and the workspace stay writable. */
	sbx_strvec_pushl(a, "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", s->cwd, "--clearenv", NULL);
	build_env(s, h, p);
	for (size_t i = 0; i < p->env_keys.len; i++)
		sbx_strvec_pushl(a, "--setenv", p->env_keys.items[i], p->env_values.items[i], NULL);
	sbx_strvec_pushf(a, "--seccomp");
	sbx_strvec_pushf(a, "%d", SBX_SECCOMP_FD);
	/* After "--" an argv of "--tmpfs" is a program name, never an option. */
	sbx_strvec_push(a, "--");
	if (s->report_denials) {
		sbx_strvec_pushl(a, SBX_NOTIFY_PATH, "--filter-fd", NULL);
		sbx_strvec_pushf(a, "%d", SBX_NOTIFY_FILTER_FD);
		sbx_strvec_push(a, "--socket-fd");
		sbx_strvec_pushf(a, "%d", SBX_NOTIFY_SOCKET_FD);
		sbx_strvec_push(a, "--");
	}
	if (s->egress_socket)
		sbx_strvec_pushl(a, EGRESS_DIR "/egress-bridge", "--socket", EGRESS_DIR "/egress.sock", "--listen",
				 SBX_EGRESS_PORT, "--", NULL);
	for (size_t i = 0; i < s->argv.len; i++)
		sbx_strvec_push(a, s->argv.items[i]);

	if (a->failed || p->env_keys.failed || p->env_values.failed || binds) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "building the bwrap command line");
		return -1;
	}
	return 0;
}

void sbx_launch_plan_free(struct sbx_launch_plan *p)
{
	sbx_strvec_free(&p->argv);
	sbx_strvec_free(&p->env_keys);
	sbx_strvec_free(&p->env_values);
}
