/* probe.c — the probe algorithm: fresh /proc or the bind fallback, then
 * --disable-userns on that shape, then a one-rule seccomp filter. */
#include "probe.h"
#include "program_path.h"
#include "bwrap.h"
#include "error.h"
#include "seccomp_memfd.h"
#include "spawn.h"

#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

struct attempt {
	bool disable_userns;
	bool proc_bind;
	int seccomp_fd; /* -1: no filter */
};

/* Builds the argv of one probe sandbox. Paired probes differ in exactly the
 * one varied token, so a refusal is attributable to that token. */
static void probe_argv(const char *bwrap, const struct attempt *a, const char **argv)
{
	size_t n = 0;

	argv[n++] = bwrap;
	argv[n++] = "--unshare-all";
	argv[n++] = "--unshare-user";
	argv[n++] = "--die-with-parent";
	if (a->disable_userns)
		argv[n++] = "--disable-userns";
	argv[n++] = "--ro-bind"; argv[n++] = "/usr"; argv[n++] = "/usr";
	argv[n++] = "--symlink"; argv[n++] = "usr/bin"; argv[n++] = "/bin";
	argv[n++] = "--symlink"; argv[n++] = "usr/lib"; argv[n++] = "/lib";
	argv[n++] = "--symlink"; argv[n++] = "usr/lib64"; argv[n++] = "/lib64";
	if (a->proc_bind) {
		argv[n++] = "--ro-bind"; argv[n++] = "/proc"; argv[n++] = "/proc";
	} else {
		argv[n++] = "--proc"; argv[n++] = "/proc";
	}
	if (a->seccomp_fd >= 0) {
		argv[n++] = "--seccomp"; argv[n++] = "3";
	}
	argv[n++] = "--";
	argv[n++] = "/usr/bin/true";
	argv[n] = NULL;
}

/* Runs one probe sandbox. Returns the wait status (or -1 when it could not
 * run or timed out) and leaves the failure line in detail. */
static int attempt_run(const char *bwrap, const struct attempt *a, int timeout_ms,
		       char *detail, size_t size, bool *inconclusive)
{
	const char *argv[32];
	struct sbx_capture c;
	struct sbx_error e;
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1 };

	probe_argv(bwrap, a, argv);
	if (a->seccomp_fd >= 0) {
		s.extra_fds = &a->seccomp_fd;
		s.n_extra = 1;
	}
	detail[0] = '\0';
	if (sbx_spawn_capture(&s, timeout_ms, SBX_PROBE_OUTPUT_CAP, &c, &e) != 0) {
		snprintf(detail, size, "%.900s", e.message);
		return -1;
	}
	int status = c.timed_out ? -1 : c.status;
	/* bwrap itself never ends by a signal: one it got, or a deadline, says
	 * nothing of the host (a loaded machine, another process of the uid). */
	if (c.timed_out || WIFSIGNALED(c.status))
		*inconclusive = true;
	sbx_last_line(c.err, detail, size);
	if (!detail[0]) {
		if (c.timed_out)
			snprintf(detail, size, "timed out after %d ms", timeout_ms);
		else if (WIFSIGNALED(c.status))
			snprintf(detail, size, "killed by signal %d", WTERMSIG(c.status));
		else if (WEXITSTATUS(c.status) != 0)
			snprintf(detail, size, "exited with status %d", WEXITSTATUS(c.status));
	} else if (c.timed_out) {
		size_t used = strlen(detail);
		snprintf(detail + used, size - used, " (timed out after %d ms)", timeout_ms);
	}
	sbx_capture_free(&c);
	return status;
}

static bool attempt_ok(const char *bwrap, const struct attempt *a, int timeout_ms,
		       char *detail, size_t size, bool *inconclusive)
{
	int status = attempt_run(bwrap, a, timeout_ms, detail, size, inconclusive);
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Proves the kernel loads and enforces a filter passed with --seccomp: the
 * one rule kills exit_group, the call /usr/bin/true always makes last, so an
 * enforced filter ends it with SIGSYS and bwrap reports 128 + 31. An exit
 * status, not a message, so the result does not depend on the locale. */
static bool seccomp_works(const char *bwrap, struct attempt a, int timeout_ms,
			  char *detail, size_t size, bool *inconclusive)
{
	struct sbx_error e;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int fd = -1;

	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(exit_group), 0) != 0 ||
	    (fd = sbx_seccomp_memfd(ctx, &e)) < 0) {
		snprintf(detail, size, "cannot compile a seccomp filter: %.900s",
			 fd < 0 && ctx ? e.message : "libseccomp failed");
		if (ctx)
			seccomp_release(ctx);
		return false;
	}
	seccomp_release(ctx);
	a.seccomp_fd = fd;
	int status = attempt_run(bwrap, &a, timeout_ms, detail, size, inconclusive);
	close(fd);
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGSYS)
		return true;
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		snprintf(detail, size, "a seccomp filter passed with --seccomp was not enforced");
	return false;
}

static bool says_unknown_option(const char *line)
{
	return strcasestr(line, "unknown option") != NULL;
}

static void mark_unusable(struct sbx_probe_result *r, const char *detail)
{
	r->usable = false;
	r->reason = SBX_PROBE_SANDBOX_UNUSABLE;
	r->disable_userns = false;
	snprintf(r->detail, sizeof(r->detail), "%s", detail);
}

void sbx_probe_run(const char *requested, int timeout_ms, struct sbx_probe_result *r)
{
	char line[1024];
	struct attempt a = { .seccomp_fd = -1 };

	memset(r, 0, sizeof(*r));
	r->uid = geteuid();
	r->probed_at = time(NULL);
	r->reason = SBX_PROBE_SANDBOX_UNUSABLE;
	snprintf(r->requested, sizeof(r->requested), "%s", requested);
	if (timeout_ms <= 0)
		timeout_ms = SBX_PROBE_TIMEOUT_MS;

	r->bwrap_found = sbx_find_executable(requested, r->bwrap_path, sizeof(r->bwrap_path));
	if (!r->bwrap_found) {
		r->bwrap_path[0] = '\0';
		snprintf(line, sizeof(line), "bubblewrap (%.900s) was not found on this host", requested);
		mark_unusable(r, line);
		goto diagnose;
	}
	const char *bwrap = r->bwrap_path;
	sbx_bwrap_version(bwrap, timeout_ms, r->bwrap_version, sizeof(r->bwrap_version));
	if (!sbx_bwrap_check_help(bwrap, timeout_ms, r->missing_options, sizeof(r->missing_options))) {
		snprintf(line, sizeof(line), "%s", r->missing_options);
		r->missing_options[0] = '\0';
		mark_unusable(r, line);
		goto diagnose;
	}
	if (r->missing_options[0]) {
		snprintf(line, sizeof(line), "bubblewrap at %.500s lacks required sandbox options: %.250s",
			 bwrap, r->missing_options);
		mark_unusable(r, line);
		goto diagnose;
	}

	/* P1: a fresh procfs. P2: the read-only bind of the host's /proc. */
	if (!attempt_ok(bwrap, &a, timeout_ms, r->proc_detail, sizeof(r->proc_detail), &r->inconclusive)) {
		a.proc_bind = true;
		if (!attempt_ok(bwrap, &a, timeout_ms, line, sizeof(line), &r->inconclusive)) {
			/* The product default's refusal is the one reported. */
			mark_unusable(r, r->proc_detail);
			goto diagnose;
		}
		r->proc_bind = true;
		r->proc_fallback = true;
	} else {
		r->proc_detail[0] = '\0';
	}
	r->sandbox_built = true;

	/* P3: the chosen shape plus --disable-userns. */
	a.disable_userns = true;
	if (attempt_ok(bwrap, &a, timeout_ms, line, sizeof(line), &r->inconclusive)) {
		r->reason = SBX_PROBE_SUPPORTED;
		r->disable_userns = true;
	} else {
		/* bwrap before 0.8 lacks the option; the message is English-only,
		 * so the version is a second, locale-independent signal. */
		bool old = r->bwrap_version[0] && sbx_version_compare(r->bwrap_version, "0.8") < 0;
		r->reason = says_unknown_option(line) || old ? SBX_PROBE_OPTION_UNKNOWN
							     : SBX_PROBE_OPTION_REJECTED;
		snprintf(r->detail, sizeof(r->detail), "%s", line);
		a.disable_userns = false;
	}

	r->usable = true;
	r->seccomp = seccomp_works(bwrap, a, timeout_ms, line, sizeof(line), &r->inconclusive);
	if (!r->seccomp)
		mark_unusable(r, line);
diagnose:
	sbx_host_facts_read(r->bwrap_found ? r->bwrap_path : NULL, &r->host);
}

const char *sbx_probe_reason_name(enum sbx_probe_reason reason)
{
	switch (reason) {
	case SBX_PROBE_SUPPORTED: return "supported";
	case SBX_PROBE_OPTION_UNKNOWN: return "option-unknown";
	case SBX_PROBE_OPTION_REJECTED: return "option-rejected";
	case SBX_PROBE_SANDBOX_UNUSABLE: return "sandbox-unusable";
	}
	return "sandbox-unusable";
}
