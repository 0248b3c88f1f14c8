/* run_as.c — choosing and becoming the workload's unprivileged identity.
 * Why: with bwrap run by root, the sandbox's uid 0 is host uid 0, and
 * /proc/sys/kernel/core_pattern opens for writing from inside despite
 * --cap-drop ALL, a path to code execution as host root. */
#include "run_as.h"
#include "exitcodes.h"
#include "passwd_file.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_id(const char *text, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(text, &end, 10);
	if (errno || end == text || *end || v > 0x7fffffffUL || text[0] == '-')
		return -1;
	*out = v;
	return 0;
}

int sbx_run_as_resolve(const char *want, struct sbx_run_as *r, struct sbx_error *e)
{
	memset(r, 0, sizeof(*r));
	if (geteuid() != 0) {
		r->uid = geteuid();
		r->gid = getegid();
		return 0;
	}
	r->switch_user = true;
	if (!want || !*want)
		want = getenv("SBX_RUN_AS");
	struct sbx_passwd_entry pw;
	if (!want || !*want) {
		bool sbx_user = sbx_passwd_lookup("sbx", 0, &pw);
		r->uid = sbx_user ? pw.uid : SBX_RUN_AS_DEFAULT_ID;
		r->gid = sbx_user ? pw.gid : SBX_RUN_AS_DEFAULT_ID;
	} else {
		char buf[256];
		unsigned long uid, gid;
		snprintf(buf, sizeof(buf), "%s", want);
		char *colon = strchr(buf, ':');
		if (colon)
			*colon = '\0';
		if (parse_id(buf, &uid) == 0) {
			gid = sbx_passwd_lookup(NULL, (uid_t)uid, &pw) ? pw.gid : uid;
		} else if (sbx_passwd_lookup(buf, 0, &pw)) {
			uid = pw.uid;
			gid = pw.gid;
		} else {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-run-as", "run-as: no user named '%.64s' in /etc/passwd", buf);
			return -1;
		}
		if (colon && parse_id(colon + 1, &gid) != 0) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-run-as", "run-as: '%.64s' is not a numeric gid", colon + 1);
			return -1;
		}
		r->uid = (uid_t)uid;
		r->gid = (gid_t)gid;
	}
	if (r->uid == 0 || r->gid == 0) {
		sbx_error_set(e, SBX_EXIT_POLICY, "run-as-root",
			      "run-as: a workload never runs as host uid or gid 0");
		sbx_error_remedy(e, "Choose an unprivileged uid with --run-as or SBX_RUN_AS, or create the 'sbx' system user.");
		return -1;
	}
	if (r->uid == SBX_PROBE_UID) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-run-as", "run-as: uid %u is the sandbox probe's alone",
			      (unsigned)SBX_PROBE_UID);
		return -1;
	}
	return 0;
}

int sbx_run_as_switch(const struct sbx_run_as *r, struct sbx_error *e)
{
	if (!r->switch_user)
		return 0;
	if (setgroups(0, NULL) != 0 || setresgid(r->gid, r->gid, r->gid) != 0 ||
	    setresuid(r->uid, r->uid, r->uid) != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "run-as-failed", "cannot switch to uid %u gid %u: %s",
			      (unsigned)r->uid, (unsigned)r->gid, strerror(errno));
		return -1;
	}
	/* Paranoia: if root could come back, the switch did not happen. */
	if (setuid(0) == 0 || geteuid() == 0 || getegid() == 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "run-as-failed", "root privileges are still reachable");
		return -1;
	}
	return 0;
}
