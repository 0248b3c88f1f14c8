/* confine.c — what the gateway gives up before it serves: started as root
 * it becomes an unprivileged uid with no capability in any set; always
 * no_new_privs, not dumpable, and its own seccomp filter (seccomp_table.h). */
#include "egress.h"
#include "../lib/exitcodes.h"
#include "../lib/seccomp_build.h"

#include <cap-ng.h>
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int fail(struct sbx_error *e, const char *what)
{
	sbx_error_set(e, SBX_EXIT_INTERNAL, "confine-failed", "the gateway cannot %s: %s", what,
		      strerror(errno ? errno : EPERM));
	return -1;
}

int gateway_confine(const struct sbx_run_as *who, struct sbx_error *e)
{
	/* The bounding set needs CAP_SETPCAP to shrink: while we hold it. */
	capng_get_caps_process();
	bool bounds = capng_have_capability(CAPNG_EFFECTIVE, CAP_SETPCAP);
	errno = 0;
	if (bounds) {
		capng_clear(CAPNG_SELECT_BOUNDS);
		if (capng_apply(CAPNG_SELECT_BOUNDS) != 0)
			return fail(e, "clear its capability bounding set");
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
		return fail(e, "clear its ambient capabilities");
	/* A gateway started as a child (sbx-env's install sandbox) dies with
	 * its parent: the switch clears that signal, so it is set again. */
	int pdeath = 0;
	pid_t parent = getppid();
	(void)prctl(PR_GET_PDEATHSIG, &pdeath);
	if (sbx_run_as_switch(who, e) != 0)
		return -1;
	if (pdeath && (prctl(PR_SET_PDEATHSIG, pdeath) != 0 || getppid() != parent))
		return fail(e, "outlive its parent");
	/* setresuid away from 0 empties the permitted and effective sets, not
	 * the inheritable one: clear all three, whoever we were. */
	capng_clear(CAPNG_SELECT_CAPS);
	errno = 0;
	if (capng_apply(CAPNG_SELECT_CAPS) != 0)
		return fail(e, "drop its capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return fail(e, "set no_new_privs");
	/* Not dumpable: no core file, and no ptrace even from its own uid. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return fail(e, "become non-dumpable");
	capng_get_caps_process();
	if (capng_have_capabilities(CAPNG_SELECT_CAPS) != CAPNG_NONE ||
	    (bounds && capng_have_capabilities(CAPNG_SELECT_BOUNDS) != CAPNG_NONE)) {
		errno = EPERM;
		return fail(e, "verify that it holds no capability");
	}
	scmp_filter_ctx ctx = sbx_seccomp_build_gateway(SCMP_ARCH_NATIVE, e);
	if (!ctx)
		return -1;
	int rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc != 0) {
		errno = -rc;
		return fail(e, "load its seccomp filter");
	}
	return 0;
}
