/* supervisor_caps.c — the capabilities a root supervisor needs, checked
 * against those it was given (a container's default set lacks some) and
 * narrowed to their intersection. */
#include "supervisor_caps.h"
#include "exitcodes.h"

#include <cap-ng.h>
#include <ctype.h>
#include <linux/securebits.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

/* What the run needs as root, and what a run without it loses. An
 * essential one (lost == NULL) cannot be done without. */
static const struct wanted {
	int cap;
	const char *name;
	const char *lost; /* NULL: essential */
	const char *why;
} wanted[] = {
	{ CAP_CHOWN, "CAP_CHOWN", NULL, "hand the workspace to the workload's uid" },
	{ CAP_SETUID, "CAP_SETUID", NULL, "run the workload as its own uid" },
	{ CAP_SETGID, "CAP_SETGID", NULL, "run the workload as its own gid" },
	{ CAP_KILL, "CAP_KILL", NULL, "stop the workload, which runs as another uid" },
	{ CAP_FOWNER, "CAP_FOWNER", NULL, "clear the set-id bits the workload leaves on its files" },
	{ CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH",
	  "dac_override stands in for it, held for the run and inherited by sbx-launch (its ownership walk)",
	  "walk what the workload wrote (quota, snapshot) whatever modes it set" },
	{ CAP_SETPCAP, "CAP_SETPCAP",
	  "the bounding set is not narrowed (it holds nothing more than the run needs)",
	  "narrow the bounding set sbx-launch and the egress gateway inherit" },
	{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN",
	  "host directories reach the sandbox only where every parent is searchable by the workload's uid",
	  "let sbx-launch stage the sandbox's binds in a mount namespace of its own (bounding set only)" },
	{ CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE",
	  "cgroups are made only where the hierarchy lets its owner write without it (else limits fall back "
	  "as without cgroups)",
	  "make the run's cgroups" },
};
#define N_WANTED (sizeof(wanted) / sizeof(wanted[0]))

static bool given(int cap)
{
	return capng_have_capability(CAPNG_PERMITTED, (unsigned)cap) != 0;
}

static bool is_wanted(unsigned cap)
{
	for (size_t i = 0; i < N_WANTED; i++)
		if ((unsigned)wanted[i].cap == cap)
			return true;
	return false;
}

static int refuse(struct sbx_error *e, const struct wanted *w, const char *extra)
{
	return sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "capability-missing",
			     "sbx-run runs as root without %s, which it needs to %s%s; give it that capability "
			     "(a container: --cap-add %s)",
			     w->name, w->why, extra, w->name + 4),
	       -1;
}

/* Without CAP_SETPCAP the bounding set stays as given: acceptable only when
 * it holds nothing the run does not need (sbx-launch, exec'd as root,
 * would hold all of it). */
static int check_unnarrowed_bounds(struct sbx_error *e)
{
	char extra[512] = "";
	size_t n = 0;
	for (unsigned cap = 0; cap <= CAP_LAST_CAP; cap++) {
		if (is_wanted(cap) || !capng_have_capability(CAPNG_BOUNDING_SET, cap))
			continue;
		const char *name = capng_capability_to_name(cap);
		char upper[40];
		size_t k = 0;
		for (; name && name[k] && k < sizeof(upper) - 1; k++)
			upper[k] = (char)toupper((unsigned char)name[k]);
		upper[k] = '\0';
		int w = snprintf(extra + n, sizeof(extra) - n, "%sCAP_%s", n ? ", " : "", k ? upper : "?");
		if (w < 0 || (size_t)w >= sizeof(extra) - n) {
			memcpy(extra + sizeof(extra) - 4, "...", 4); /* the rest cut, said so */
			n = sizeof(extra) - 1;
			break;
		}
		n += (size_t)w;
	}
	if (!n)
		return 0;
	return sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "capability-missing",
			     "sbx-run runs as root without CAP_SETPCAP, so it cannot narrow its bounding set, which "
			     "holds %s that sbx-launch would inherit; give it CAP_SETPCAP or drop those (a container: "
			     "--cap-add SETPCAP)",
			     extra),
	       -1;
}

int sbx_supervisor_caps_check(struct sbx_supervisor_caps *out, struct sbx_error *e)
{
	memset(out, 0, sizeof(*out));
	int bits = prctl(PR_GET_SECUREBITS);
	if (bits > 0 && (bits & SECBIT_NOROOT))
		return sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "securebits",
				     "sbx-run runs as root with SECBIT_NOROOT set: sbx-launch, exec'd as root, would "
				     "hold no capability to hand the workspace over and switch to the workload's uid; "
				     "start it without that securebit"),
		       -1;
	capng_get_caps_process();
	out->have_dac_override = given(CAP_DAC_OVERRIDE);
	out->dac_override_held = !given(CAP_DAC_READ_SEARCH) && out->have_dac_override;
	out->bounds = given(CAP_SETPCAP);
	if (!out->bounds && check_unnarrowed_bounds(e) != 0)
		return -1;
	out->missing = json_array();
	for (size_t i = 0; i < N_WANTED; i++) {
		const struct wanted *w = &wanted[i];
		if (given(w->cap))
			continue;
		if (!w->lost || (w->cap == CAP_DAC_READ_SEARCH && !out->dac_override_held)) {
			json_decref(out->missing);
			out->missing = NULL;
			return refuse(e, w, w->cap == CAP_DAC_READ_SEARCH ? " (nor CAP_DAC_OVERRIDE to stand in)" : "");
		}
		json_array_append_new(out->missing, json_pack("{s:s,s:s}", "capability", w->name, "lost", w->lost));
	}
	return 0;
}

int sbx_supervisor_caps_apply(const struct sbx_supervisor_caps *c, struct sbx_error *e)
{
	int select = c->bounds ? CAPNG_SELECT_BOTH : CAPNG_SELECT_CAPS;
	capng_type_t sets = CAPNG_EFFECTIVE | CAPNG_PERMITTED | (c->bounds ? CAPNG_BOUNDING_SET : 0);
	bool have[N_WANTED];
	capng_get_caps_process();
	for (size_t i = 0; i < N_WANTED; i++)
		have[i] = given(wanted[i].cap);
	capng_clear(select);
	/* sys_admin is never in the supervisor's own sets, only in the bounding
	 * set: sbx-launch, exec'd as root, gets it back for its mount namespace. */
	for (size_t i = 0; i < N_WANTED; i++) {
		if (wanted[i].cap == CAP_SYS_ADMIN && have[i] && c->bounds &&
		    capng_update(CAPNG_ADD, CAPNG_BOUNDING_SET, CAP_SYS_ADMIN) != 0)
			goto failed;
		if (wanted[i].cap == CAP_DAC_OVERRIDE || wanted[i].cap == CAP_SYS_ADMIN || !have[i])
			continue;
		if (capng_update(CAPNG_ADD, sets, (unsigned)wanted[i].cap) != 0)
			goto failed;
	}
	if (c->have_dac_override &&
	    capng_update(CAPNG_ADD, c->dac_override_held ? sets : CAPNG_PERMITTED, CAP_DAC_OVERRIDE) != 0)
		goto failed;
	if (capng_apply(select) != 0)
		goto failed;
	return 0;
failed:
	return sbx_error_set(e, SBX_EXIT_INTERNAL, "capabilities", "cannot narrow the supervisor's capabilities"), -1;
}
