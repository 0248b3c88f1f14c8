/* probe_as.h — the probe run as an unprivileged uid for what root starts (a
 * root caller forks a child that drops to SBX_PROBE_UID), so root can cache
 * that answer for every workload uid. */
#ifndef SBX_PROBE_AS_H
#define SBX_PROBE_AS_H

#include "probe.h"
#include "run_as.h"

#include <jansson.h>
#include <stdbool.h>

/* The probe's JSON answer, probed as SBX_PROBE_UID with as's gid when
 * as->switch_user, else as the caller. r's probed_at is set either way (the
 * rest only for the caller's own probe). Never NULL: a child that cannot
 * probe (killed, stopped past its deadline of six probe timeouts, failed)
 * gives an unusable answer that says why, with *trusted false: never to be
 * cached; so is an answer one of whose sandboxes timed out or got a signal. */
json_t *sbx_probe_json_as(const struct sbx_run_as *as, const char *requested, int timeout_ms,
			  struct sbx_probe_result *r, bool *trusted);

#endif
