/* probe_json.c — a probe result as JSON, and the launch profile read back
 * from such JSON (fresh or cached). */
#include "probe.h"
#include "json.h"

#include <string.h>

static json_t *string_or_null(const char *s)
{
	return s && *s ? sbx_json_string_lossy(s) : json_null();
}

static json_t *option_list(const char *spaced)
{
	json_t *list = json_array();
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", spaced);
	for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		json_array_append_new(list, json_string(tok));
	return list;
}

json_t *sbx_probe_to_json(const struct sbx_probe_result *r)
{
	char when[32];
	struct tm tm;

	gmtime_r(&r->probed_at, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_pack("{s:{s:o,s:o,s:o,s:b},s:b,s:s,s:b,s:b,s:s,s:o,s:o,s:b,s:o,s:I,s:o,s:s}",
			 "bwrap",
			 "path", string_or_null(r->bwrap_path),
			 "requested", sbx_json_string_lossy(r->requested),
			 "version", string_or_null(r->bwrap_version),
			 "setuid", r->host.bwrap_setuid,
			 "usable", r->usable,
			 "procMode", r->proc_bind ? "bind" : "new",
			 "procFallback", r->proc_fallback,
			 "disableUserns", r->disable_userns,
			 "reason", sbx_probe_reason_name(r->reason),
			 "detail", string_or_null(r->detail),
			 "procDetail", string_or_null(r->proc_detail),
			 "seccomp", r->seccomp,
			 "missingOptions", option_list(r->missing_options),
			 "uid", (json_int_t)r->uid,
			 "warnings", sbx_probe_warnings(r),
			 "probedAt", when);
}

int sbx_probe_profile(const json_t *answer, struct sbx_sandbox_profile *p)
{
	const json_t *bwrap = json_object_get(answer, "bwrap");
	const json_t *usable = json_object_get(answer, "usable");
	const json_t *disable = json_object_get(answer, "disableUserns");
	const char *mode = json_string_value(json_object_get(answer, "procMode"));
	const char *path = json_string_value(json_object_get(bwrap, "path"));

	memset(p, 0, sizeof(*p));
	if (!json_is_boolean(usable) || !json_is_boolean(disable) || !mode ||
	    (strcmp(mode, "new") != 0 && strcmp(mode, "bind") != 0))
		return -1;
	p->usable = json_is_true(usable);
	p->disable_userns = json_is_true(disable);
	p->proc_bind = strcmp(mode, "bind") == 0;
	if (path) {
		if (strlen(path) >= sizeof(p->bwrap_path))
			return -1;
		memcpy(p->bwrap_path, path, strlen(path) + 1);
	}
	if (p->usable && !path)
		return -1;
	return 0;
}
