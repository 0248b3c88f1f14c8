/* probe_warnings.c — what a degraded or unusable probe result means for the
 * operator: the protection lost, what still holds, and the remedy. */
#include "probe.h"
#include "json.h"

#include <stdarg.h>
#include <stdio.h>

#define STILL_HOLDS \
	"Still in force: the namespaces, the seccomp filter and the mount allowlist. " \
	"Lost: bwrap's kernel limit on nested user namespaces inside the sandbox " \
	"(user.max_user_namespaces=1); only a seccomp filter that refuses CLONE_NEWUSER stands in for it."

__attribute__((format(printf, 4, 5)))
static void warn(json_t *list, const char *code, const char *remedy, const char *fmt, ...)
{
	char message[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	json_array_append_new(list, json_pack("{s:s,s:o,s:s}", "code", code,
					      "message", sbx_json_string_lossy(message),
					      "remedy", remedy));
}

/* Why no sandbox builds: the host settings that are known to cause it. */
static void diagnose_host(json_t *list, const struct sbx_host_facts *h)
{
	if (h->unprivileged_userns_clone == 0)
		warn(list, "userns-clone-disabled",
		     "sysctl -w kernel.unprivileged_userns_clone=1, and persist it in /etc/sysctl.d/.",
		     "kernel.unprivileged_userns_clone is 0: this kernel refuses user namespaces "
		     "to unprivileged users, and bwrap needs one.");
	if (h->max_user_namespaces == 0)
		warn(list, "max-user-namespaces-zero",
		     "sysctl -w user.max_user_namespaces=15000, and persist it in /etc/sysctl.d/.",
		     "user.max_user_namespaces is 0: no user namespace can be created, and bwrap needs one.");
	if (h->apparmor_restrict_userns == 1)
		warn(list, "apparmor-userns-restricted",
		     "Install an AppArmor profile that grants bwrap the userns permission "
		     "(/etc/apparmor.d/bwrap: 'abi <abi/4.0>, profile bwrap /usr/bin/bwrap "
		     "flags=(unconfined) { userns, }', then apparmor_parser -r), or "
		     "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0.",
		     "kernel.apparmor_restrict_unprivileged_userns is 1 (Ubuntu 24.04 and later): "
		     "AppArmor lets only profiled programs create user namespaces.");
}

static void unusable(json_t *list, const struct sbx_probe_result *r)
{
	if (!r->bwrap_found) {
		char remedy[1024];
		snprintf(remedy, sizeof(remedy), "Install bubblewrap: %s. Or point --bwrap, SBX_BWRAP "
			 "or SCIENCE_AGENT_BWRAP_PATH at an installed one.", sbx_bwrap_install_hint(&r->host));
		warn(list, "bwrap-missing", remedy,
		     "bubblewrap (%s) was not found on this host; sandboxed execution will fail.",
		     r->requested);
		return;
	}
	if (r->missing_options[0]) {
		warn(list, "bwrap-options-missing",
		     "Install bubblewrap 0.8 or later from the distribution's packages.",
		     "bubblewrap at %s lacks required sandbox options: %s.", r->bwrap_path,
		     r->missing_options);
		return;
	}
	if (r->sandbox_built && !r->seccomp) {
		warn(list, "seccomp-unavailable",
		     "Run on a kernel built with CONFIG_SECCOMP_FILTER; in a container, allow "
		     "seccomp(2) and prctl(PR_SET_SECCOMP) so filters can be stacked.",
		     "bubblewrap at %s builds a sandbox but cannot apply a seccomp filter: %s. "
		     "sbx never runs a workload without its seccomp filter.", r->bwrap_path, r->detail);
		return;
	}
	warn(list, "sandbox-unusable",
	     "Check the sysctls kernel.unprivileged_userns_clone (must be 1) and "
	     "kernel.apparmor_restrict_unprivileged_userns (must be 0 on Ubuntu 24.04+, or "
	     "give bwrap an AppArmor profile), and that user.max_user_namespaces is not 0. "
	     "In a container, the runtime's default seccomp profile refuses user namespaces: "
	     "run it with one that allows them (contrib/kubernetes/sbx-userns.json as a "
	     "Localhost seccompProfile) and AppArmor unconfined.",
	     "bubblewrap at \"%s\" could not build a sandbox: %s. bubblewrap is installed but "
	     "cannot create a sandbox on this host. The Web UI and control API still start; "
	     "run_python and run_shell will fail.", r->bwrap_path, r->detail);
	diagnose_host(list, &r->host);
}

json_t *sbx_probe_warnings(const struct sbx_probe_result *r)
{
	json_t *list = json_array();

	if (r->host.bwrap_setuid)
		warn(list, "bwrap-setuid",
		     "Use a bwrap without the setuid bit (chmod u-s, or the distribution's "
		     "package) on a kernel with unprivileged user namespaces.",
		     "bubblewrap at %s is setuid root: a setuid bwrap is privileged attack surface "
		     "and refuses some options sbx relies on.", r->bwrap_path);
	if (!r->usable) {
		unusable(list, r);
		return list;
	}
	if (r->proc_fallback)
		warn(list, "proc-fallback",
		     "Docker's readonlyPaths/maskedPaths over /proc cause this: run the container with "
		     "security_opt: systempaths=unconfined. Do not use privileged to work around it.",
		     "cannot mount a fresh /proc here: %s. Falling back to --ro-bind /proc /proc so "
		     "executions still run; the sandbox sees the container's /proc (its process list).",
		     r->proc_detail);
	if (r->reason == SBX_PROBE_OPTION_UNKNOWN)
		warn(list, "userns-option-unknown",
		     "Upgrade bubblewrap to 0.8 or later for the stronger profile.",
		     "bubblewrap at %s (version %s) does not support --disable-userns (requires "
		     "bwrap >= 0.8; Ubuntu 22.04 ships 0.6): %s. " STILL_HOLDS, r->bwrap_path,
		     r->bwrap_version[0] ? r->bwrap_version : "unknown", r->detail);
	else if (r->reason == SBX_PROBE_OPTION_REJECTED)
		warn(list, "userns-option-rejected",
		     "Run the runner where /proc/sys is writable (a host or VM rather than an LXC or "
		     "Docker container with a read-only /proc/sys), or accept the weaker profile.",
		     "bubblewrap at %s supports --disable-userns but cannot use it here: %s. This is "
		     "expected under LXC or runtimes with a read-only /proc/sys, because the option "
		     "writes user.max_user_namespaces; the option is omitted so executions still run. "
		     STILL_HOLDS, r->bwrap_path, r->detail);
	return list;
}
