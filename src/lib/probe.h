/* probe.h — what this host's bubblewrap can do, found by building real
 * minimal sandboxes. sbx-probe prints it; sbx-launch and sbx-httpd consume
 * the very same answer through sbx_probe() (probe_cache.h). */
#ifndef SBX_PROBE_H
#define SBX_PROBE_H

#include "host_facts.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#define SBX_PROBE_TIMEOUT_MS 15000
#define SBX_PROBE_OUTPUT_CAP (1u << 20)

enum sbx_probe_reason {
	SBX_PROBE_SUPPORTED,        /* --disable-userns works: the full profile */
	SBX_PROBE_OPTION_UNKNOWN,   /* this bwrap does not know --disable-userns */
	SBX_PROBE_OPTION_REJECTED,  /* it knows it, the environment refuses it */
	SBX_PROBE_SANDBOX_UNUSABLE, /* no sandbox builds at all */
};

struct sbx_probe_result {
	char requested[PATH_MAX];    /* the bwrap asked for ("bwrap", a path) */
	char bwrap_path[PATH_MAX];   /* resolved absolute path; "" when missing */
	char bwrap_version[64];      /* "" when unknown */
	char missing_options[256];   /* required options --help lacks */
	bool bwrap_found;
	bool sandbox_built;          /* a sandbox without extra options ran */
	bool usable;
	bool proc_bind;              /* procMode "bind" instead of "new" */
	bool proc_fallback;
	bool disable_userns;
	bool seccomp;
	bool inconclusive;           /* a probe sandbox timed out or got a signal: the answer is never cached */
	enum sbx_probe_reason reason;
	char detail[1024];
	char proc_detail[1024];
	uid_t uid;
	time_t probed_at;
	struct sbx_host_facts host;
};

/* Runs the probe for the bwrap named by `requested` (see bwrap.h). */
void sbx_probe_run(const char *requested, int timeout_ms, struct sbx_probe_result *r);

const char *sbx_probe_reason_name(enum sbx_probe_reason reason);

/* The probe's JSON answer (documented in sbx-probe(1)). */
json_t *sbx_probe_to_json(const struct sbx_probe_result *r);

/* The warnings for a result: [{code, message, remedy}] (probe_warnings.c). */
json_t *sbx_probe_warnings(const struct sbx_probe_result *r);

/* What a launch needs from a probe answer. */
struct sbx_sandbox_profile {
	bool usable;
	bool disable_userns;
	bool proc_bind;
	char bwrap_path[PATH_MAX];
};

/* Extracts the profile from a probe answer; -1 when the answer is malformed. */
int sbx_probe_profile(const json_t *answer, struct sbx_sandbox_profile *p);

#endif
