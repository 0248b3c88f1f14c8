/* supervisor_caps.h — which of the capabilities a root supervisor (sbx-run)
 * needs it was given: the intersection it keeps, what is lost without the
 * rest, and a refusal naming an essential one. sbx-httpd asks the same at
 * startup so an operator hears of it once. */
#ifndef SBX_SUPERVISOR_CAPS_H
#define SBX_SUPERVISOR_CAPS_H

#include "error.h"

#include <jansson.h>
#include <stdbool.h>

struct sbx_supervisor_caps {
	bool bounds;            /* CAP_SETPCAP: the bounding set can be narrowed */
	bool have_dac_override; /* given: raised to make cgroups */
	bool dac_override_held; /* effective for the run: stands in for CAP_DAC_READ_SEARCH */
	json_t *missing;        /* [{capability, lost}], the caller's to release */
};

/* Reads this process's capabilities (as root). -1 with a remedy naming the
 * capability (exit 4) when an essential one is missing, when securebits
 * keep root from holding capabilities across exec, or when without
 * CAP_SETPCAP the bounding set holds more than the run needs. */
int sbx_supervisor_caps_check(struct sbx_supervisor_caps *out, struct sbx_error *e);
/* Applies the intersection: effective and permitted (and the bounding set
 * where it can) hold what the run needs; dac_override is only permitted
 * unless held. */
int sbx_supervisor_caps_apply(const struct sbx_supervisor_caps *c, struct sbx_error *e);

#endif
