/* run_request.c — the request's schema table, its checks, and the launch
 * spec it becomes (runtimes exactly as the upstream runner's). */
#include "run_request.h"
#include "egress_policy.h"
#include "secret_store.h"
#include "exitcodes.h"
#include "json.h"
#include "launch_spec.h"
#include "npu_chips.h"
#include "quota.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct sbx_json_field request_fields[] = {
	{ "executionId", SBX_JSON_STRING, true, false },
	{ "language", SBX_JSON_STRING, true, false },
	{ "code", SBX_JSON_STRING, true, false },
	{ "workspace", SBX_JSON_STRING, true, false },
	{ "readOnlyWorkspace", SBX_JSON_STRING, false, true },
	{ "cwd", SBX_JSON_STRING, false, true },
	{ "env", SBX_JSON_OBJECT, false, true },
	{ "timeoutMs", SBX_JSON_INTEGER, false, true },
	{ "maxWorkspaceBytes", SBX_JSON_INTEGER, false, true },
	{ "maxWorkspaceFiles", SBX_JSON_INTEGER, false, true },
	{ "maxOutputBytes", SBX_JSON_INTEGER, false, true },
	{ "network", SBX_JSON_OBJECT, false, true },
	{ "secretRefs", SBX_JSON_ARRAY, false, true },
	{ "environment", SBX_JSON_OBJECT, false, true },
	{ "devices", SBX_JSON_OBJECT, false, true },
	{ "skills", SBX_JSON_OBJECT, false, true },
	{ "tmpSizeBytes", SBX_JSON_INTEGER, false, true },
	{ "shmSizeBytes", SBX_JSON_INTEGER, false, true },
	{ "maxProcesses", SBX_JSON_INTEGER, false, true },
	{ "maxOpenFiles", SBX_JSON_INTEGER, false, true },
	{ "limits", SBX_JSON_OBJECT, false, true },
	{ "caps", SBX_JSON_OBJECT, false, true },
	{ "requireTerminalMessage", SBX_JSON_BOOL, false, true },
	{ "speculative", SBX_JSON_ANY, false, true },
};
static const struct sbx_json_field cap_fields[] = {
	{ "frameBytes", SBX_JSON_INTEGER, false, true },
	{ "events", SBX_JSON_INTEGER, false, true },
	{ "trackingMessages", SBX_JSON_INTEGER, false, true },
	{ "logBytes", SBX_JSON_INTEGER, false, true },
	{ "scratchBytes", SBX_JSON_INTEGER, false, true },
	{ "outputBytes", SBX_JSON_INTEGER, false, true },
	{ "mediaCount", SBX_JSON_INTEGER, false, true },
	{ "mediaBytes", SBX_JSON_INTEGER, false, true },
	{ "progressIntervalMs", SBX_JSON_INTEGER, false, true },
	{ "storedBytes", SBX_JSON_INTEGER, false, true },
};
static const struct sbx_json_field limit_fields[] = {
	{ "memoryBytes", SBX_JSON_INTEGER, false, true },
	{ "pids", SBX_JSON_INTEGER, false, true },
	{ "cpuPercent", SBX_JSON_INTEGER, false, true },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int bad(struct sbx_error *e, const char *field, const char *what)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", "%s: %s", field, what);
	return -1;
}

const char *sbx_run_language_title(const char *language)
{
	return !strcmp(language, "python") ? "Python" : !strcmp(language, "r") ? "R" : "Shell";
}

static bool id_ok(const char *id)
{
	size_t n = strlen(id);
	/* No leading '.': the state directory's own entries (.standby-<pid>) start so. */
	if (n == 0 || n > 160 || id[0] == '.')
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == ':' || *p == '.' || *p == '-'))
			return false;
	return true;
}

static bool blank(const char *s)
{
	for (; *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			return false;
	return true;
}

/* A non-negative integer field, or its default when absent or null. */
static int non_negative(const json_t *doc, const char *key, long long dflt, long long *out, struct sbx_error *e)
{
	const json_t *v = json_object_get(doc, key);
	*out = json_is_integer(v) ? json_integer_value(v) : dflt;
	return *out < 0 ? bad(e, key, "must not be negative") : 0;
}

static int env_default(const char *name, long long dflt, long long min, long long *out, struct sbx_error *e)
{
	const char *v = getenv(name);
	*out = dflt;
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || *end || end == v || n < 0 || (n && n < min)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-environment", "%s: must be 0 (none) or an integer of at least %lld, not \"%.64s\"",
			      name, min, v);
		return -1;
	}
	*out = n;
	return 0;
}

int sbx_run_limit_defaults(struct sbx_run_limits *l, struct sbx_error *e)
{
	memset(l, 0, sizeof(*l));
	return env_default("SBX_DEFAULT_MEMORY_BYTES", SBX_MEMORY_DEFAULT_BYTES, SBX_MEMORY_MIN_BYTES, &l->memory_bytes, e) != 0 ||
			       env_default("SBX_DEFAULT_PIDS", SBX_PIDS_DEFAULT, 8, &l->pids, e) != 0
		       ? -1
		       : 0;
}

/* The runtime argv of a language (code always arrives on stdin). */
static json_t *runtime_argv(const char *language, bool managed)
{
	if (!strcmp(language, "shell"))
		return json_pack("[s,s,s,s,s,s]", "/usr/bin/bash", "--noprofile", "--norc", "-euo", "pipefail", "-s");
	if (!strcmp(language, "python"))
		return managed ? json_pack("[s,s,s]", "/opt/science-env/bin/python", "-I", "-")
			       : json_pack("[s,s,s]", "python3", "-I", "-");
	return json_pack("[s,s,s]", "/opt/science-env/bin/R", "--vanilla", "--slave");
}

/* network {mode: "domain-allowlist", allowedDomains, allowPrivateNetwork,
 * revision}: a policy sbx-run serves through a gateway of its own. A
 * network with a socket names a gateway the caller runs; it goes to the
 * launch as it is. */
static int egress_policy(struct sbx_run_request *r, struct sbx_error *e)
{
	json_t *net = json_object_get(r->doc, "network");
	if (!json_is_object(net) || !json_object_get(net, "allowedDomains"))
		return 0;
	if (json_object_get(net, "socket"))
		return bad(e, "network.socket", "give either a socket or allowedDomains, not both");
	struct sbx_egress_policy policy;
	int rc = sbx_egress_policy_parse(net, &policy, e);
	if (rc == 0) {
		r->egress_policy = json_deep_copy(net);
		json_object_set_new(r->egress_policy, "revision", json_string(policy.revision));
		snprintf(r->egress_revision, sizeof(r->egress_revision), "%s", policy.revision);
	} else {
		char message[sizeof(e->message)];
		snprintf(message, sizeof(message), "%s", e->message);
		/* "policy.allowedDomains[2]: ..." names the request's field. */
		bool named = !strncmp(message, "policy.", 7);
		snprintf(e->message, sizeof(e->message), "network%s%.1000s", named ? "." : ": ", message + (named ? 7 : 0));
	}
	sbx_egress_policy_free(&policy);
	return rc;
}

/* secretRefs: names of the runner's secrets (sbx-secrets(1)) whose
 * placeholders the workload gets; only over a gateway sbx-run starts. */
static int secret_refs(struct sbx_run_request *r, struct sbx_error *e)
{
	json_t *refs = json_object_get(r->doc, "secretRefs");
	if (!refs || json_is_null(refs) || !json_array_size(refs))
		return 0;
	if (!r->egress_policy)
		return bad(e, "secretRefs", "secrets need network with allowedDomains (the domain-allowlist gateway)");
	if (json_array_size(refs) > SBX_RUN_MAX_SECRETS)
		return bad(e, "secretRefs", "at most 32 secrets");
	size_t i, k;
	json_t *v;
	json_array_foreach(refs, i, v) {
		const char *name = json_string_value(v);
		if (!name || !sbx_secret_name_ok(name)) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", "secretRefs[%zu]: a secret name (^[a-z0-9][a-z0-9_-]{0,62}$)", i);
			return -1;
		}
		for (k = 0; k < i; k++)
			if (json_equal(json_array_get(refs, k), v)) {
				sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", "secretRefs[%zu]: %s is named twice", i, name);
				return -1;
			}
	}
	r->secret_refs = json_incref(refs);
	return 0;
}

static int build_spec(struct sbx_run_request *r, struct sbx_error *e)
{
	json_t *doc = r->doc;
	const char *cwd = sbx_json_string_or(doc, "cwd", NULL);
	bool managed = json_is_object(json_object_get(doc, "environment"));

	if (!strcmp(r->language, "r") && !managed)
		return bad(e, "environment", "R execution requires the scientific environment capability (an environment prefix)");
	char ws_ref[32];
	snprintf(ws_ref, sizeof(ws_ref), "fd:%d", r->ws.fd);
	r->spec = json_pack("{s:o,s:s}", "argv", runtime_argv(r->language, managed), "workspace", ws_ref);
	static const char *const passed[] = { "readOnlyWorkspace", "env", "network", "environment", "tmpSizeBytes", "shmSizeBytes", "maxProcesses", "maxOpenFiles", "skills" };
	if (egress_policy(r, e) != 0 || secret_refs(r, e) != 0)
		return -1;
	for (size_t i = 0; i < COUNT(passed); i++) {
		if (r->egress_policy && !strcmp(passed[i], "network"))
			continue; /* the gateway's socket goes in once sbx-run has one */
		json_t *v = json_object_get(doc, passed[i]);
		if (v && !json_is_null(v))
			json_object_set(r->spec, passed[i], v);
	}
	if (cwd && *cwd) {
		if (cwd[0] == '/')
			return bad(e, "cwd", "must be workspace-relative");
		/* The launch maps it below the workspace's mount point and checks
		 * that it stays inside; here only the parent's layout is needed. */
		struct sbx_launch_spec probe;
		json_t *plain = json_deep_copy(r->spec);
		if (sbx_launch_spec_parse(plain, &probe, e) != 0) {
			json_decref(plain);
			sbx_launch_spec_free(&probe);
			return -1;
		}
		char *sandbox_cwd = NULL;
		if (asprintf(&sandbox_cwd, "%s/%s", probe.ws_mount, cwd) < 0)
			sandbox_cwd = NULL;
		sbx_launch_spec_free(&probe);
		json_decref(plain);
		if (!sandbox_cwd)
			return bad(e, "cwd", "out of memory");
		json_object_set_new(r->spec, "cwd", json_string(sandbox_cwd));
		free(sandbox_cwd);
	}
	/* Validate the whole spec now, so a bad request never starts anything. */
	struct sbx_launch_spec check;
	int rc = sbx_launch_spec_parse(r->spec, &check, e);
	sbx_launch_spec_free(&check);
	return rc;
}

/* {vendor?, chips}: sbx-run re-probes them and adds sbx-npu's fragment
 * right before the launch; a request never supplies device nodes itself. */
static int parse_devices(const json_t *doc, struct sbx_run_request *r, struct sbx_error *e)
{
	static const struct sbx_json_field fields[] = {
		{ "vendor", SBX_JSON_STRING, false, false },
		{ "chips", SBX_JSON_ARRAY, true, false },
	};
	if (!doc || json_is_null(doc))
		return 0;
	if (sbx_json_validate(doc, fields, COUNT(fields), "devices", e) != 0)
		return -1;
	const char *vendor = sbx_json_string_or(doc, "vendor", "ascend");
	if (strcmp(vendor, "ascend") && strcmp(vendor, "nvidia"))
		return bad(e, "devices.vendor", "must be \"ascend\" or \"nvidia\"");
	snprintf(r->device_vendor, sizeof(r->device_vendor), "%s", vendor);
	int n = sbx_npu_chip_list(json_object_get(doc, "chips"), "devices.chips", r->chips, e);
	if (n < 0)
		return -1;
	r->n_chips = (size_t)n;
	return 0;
}

/* speculative: true, or {keepSeconds}: the run sees the workspace through
 * an overlay, and its changes wait as a pending change (sbx-run(1)
 * SPECULATIVE RUNS) for that long. */
static int parse_speculative(const json_t *v, struct sbx_run_request *r, struct sbx_error *e)
{
	static const struct sbx_json_field fields[] = {
		{ "keepSeconds", SBX_JSON_INTEGER, false, true },
	};
	r->speculative_keep_s = SBX_SPECULATIVE_KEEP_DEFAULT_S;
	if (!v || json_is_null(v) || json_is_false(v))
		return 0;
	if (!json_is_true(v) && !json_is_object(v))
		return bad(e, "speculative", "must be true, false or {\"keepSeconds\": N}");
	if (json_is_object(v)) {
		if (sbx_json_validate(v, fields, COUNT(fields), "speculative", e) != 0)
			return -1;
		const json_t *keep = json_object_get(v, "keepSeconds");
		if (json_is_integer(keep))
			r->speculative_keep_s = json_integer_value(keep);
		if (r->speculative_keep_s < 1 || r->speculative_keep_s > SBX_SPECULATIVE_KEEP_MAX_S)
			return bad(e, "speculative.keepSeconds", "must be from 1 to 604800 (7 days)");
	}
	r->speculative = true;
	return 0;
}

/* Defaults: documented in sbx-run(1). */
static int parse_caps(const json_t *caps, struct sbx_worker_caps *c, struct sbx_error *e)
{
	static const struct {
		const char *name;
		long long dflt, min, max;
	} table[] = {
		{ "frameBytes", 1 << 20, 1024, 64 << 20 },
		{ "events", 100000, 1, 100000000 },
		{ "trackingMessages", 50000, 0, 100000000 },
		{ "logBytes", 10 << 20, 0, 1ll << 34 },
		{ "scratchBytes", 1ll << 30, 0, 1ll << 40 },
		{ "outputBytes", 1ll << 30, 0, 1ll << 40 },
		{ "mediaCount", 100, 0, 100000 },
		{ "mediaBytes", 50 << 20, 0, 1ll << 34 },
		{ "progressIntervalMs", 1000, 0, 3600000 },
		{ "storedBytes", 1ll << 30, 0, 1ll << 40 },
	};
	long long v[10];
	if (caps && !json_is_null(caps) && sbx_json_validate(caps, cap_fields, COUNT(cap_fields), "caps", e) != 0)
		return -1;
	for (size_t i = 0; i < COUNT(table); i++) {
		const json_t *x = json_object_get(caps, table[i].name);
		v[i] = json_is_integer(x) ? json_integer_value(x) : table[i].dflt;
		if (v[i] < table[i].min || v[i] > table[i].max) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", "caps.%s: must be from %lld to %lld",
				      table[i].name, table[i].min, table[i].max);
			return -1;
		}
	}
	*c = (struct sbx_worker_caps){ (uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2], (uint64_t)v[3], (uint64_t)v[4],
				       (uint64_t)v[5], (uint64_t)v[6], (uint64_t)v[7], v[8], (uint64_t)v[9] };
	return 0;
}

int sbx_run_request_parse(json_t *doc, struct sbx_run_request *r, struct sbx_error *e)
{
	long long v;

	memset(r, 0, sizeof(*r));
	r->ws = SBX_HOST_DIR_NONE;
	r->doc = doc;
	if (sbx_json_validate(doc, request_fields, COUNT(request_fields), "", e) != 0)
		return -1;
	const char *id = sbx_json_string_or(doc, "executionId", "");
	if (blank(id))
		return bad(e, "executionId", "Execution ID is required");
	if (!id_ok(id))
		return bad(e, "executionId", "must match ^[A-Za-z0-9_:-][A-Za-z0-9_:.-]{0,159}$ (no leading dot)");
	snprintf(r->execution_id, sizeof(r->execution_id), "%s", id);
	const char *lang = sbx_json_string_or(doc, "language", "");
	if (strcmp(lang, "shell") && strcmp(lang, "python") && strcmp(lang, "r"))
		return bad(e, "language", "must be shell, python or r");
	snprintf(r->language, sizeof(r->language), "%s", lang);
	json_t *code = json_object_get(doc, "code");
	r->code = json_string_value(code);
	r->code_len = json_string_length(code);
	if (blank(r->code)) {
		char what[64];
		snprintf(what, sizeof(what), "%s code is required", sbx_run_language_title(lang));
		return bad(e, "code", what);
	}
	if (r->code_len > SBX_CODE_MAX_BYTES)
		return bad(e, "code", "larger than 16 MiB");
	const char *ws = sbx_json_string_or(doc, "workspace", "");
	int inherited;
	if (ws[0] != '/' && !sbx_host_dir_fd_ref(ws, &inherited))
		return bad(e, "workspace", "must be an absolute path or fd:N (an inherited directory descriptor)");
	if (sbx_host_dir_open(ws, "workspace", &r->ws, e) != 0) {
		e->exit_code = SBX_EXIT_USAGE;
		return -1;
	}
	r->workspace = r->ws.path;
	if (non_negative(doc, "timeoutMs", 0, &r->timeout_ms, e) != 0 ||
	    non_negative(doc, "maxWorkspaceBytes", (long long)SBX_QUOTA_DEFAULT_BYTES, &v, e) != 0)
		return -1;
	r->max_workspace_bytes = (uint64_t)v;
	if (non_negative(doc, "maxWorkspaceFiles", (long long)SBX_QUOTA_DEFAULT_FILES, &v, e) != 0)
		return -1;
	r->max_workspace_files = (uint64_t)v;
	if (non_negative(doc, "maxOutputBytes", (long long)SBX_OUTPUT_DEFAULT_BYTES, &v, e) != 0)
		return -1;
	r->max_output_bytes = (uint64_t)v;
	if (r->max_output_bytes && r->max_output_bytes < 1024)
		return bad(e, "maxOutputBytes", "must be 0 (never truncate) or at least 1024");
	/* Every run is bounded: the defaults apply unless limits says 0 (off). */
	json_t *limits = json_object_get(doc, "limits");
	if (sbx_run_limit_defaults(&r->limits, e) != 0)
		return -1;
	if (limits && !json_is_null(limits)) {
		if (sbx_json_validate(limits, limit_fields, COUNT(limit_fields), "limits", e) != 0)
			return -1;
		r->limits.requested = true;
		if (non_negative(limits, "memoryBytes", r->limits.memory_bytes, &r->limits.memory_bytes, e) != 0 ||
		    non_negative(limits, "pids", r->limits.pids, &r->limits.pids, e) != 0 ||
		    non_negative(limits, "cpuPercent", 0, &r->limits.cpu_percent, e) != 0)
			return -1;
		if (r->limits.memory_bytes && r->limits.memory_bytes < SBX_MEMORY_MIN_BYTES)
			return bad(e, "limits.memoryBytes", "must be 0 (none) or at least 16 MiB (16777216)");
		if (r->limits.pids && r->limits.pids < 8)
			return bad(e, "limits.pids", "must be 0 (none) or at least 8");
		if (r->limits.cpu_percent > 100 * 1024)
			return bad(e, "limits.cpuPercent", "at most 102400 (1024 CPUs)");
	}
	if (parse_devices(json_object_get(doc, "devices"), r, e) != 0)
		return -1;
	r->require_terminal = json_is_true(json_object_get(doc, "requireTerminalMessage"));
	if (parse_caps(json_object_get(doc, "caps"), &r->caps, e) != 0 ||
	    parse_speculative(json_object_get(doc, "speculative"), r, e) != 0)
		return -1;
	return build_spec(r, e);
}

void sbx_run_request_free(struct sbx_run_request *r)
{
	sbx_host_dir_close(&r->ws);
	json_decref(r->spec);
	json_decref(r->egress_policy);
	json_decref(r->secret_refs);
	memset(r, 0, sizeof(*r));
	r->ws = SBX_HOST_DIR_NONE;
}
