/* allowlist.c — the workload allowlist (npu.md 2.2): validated whole at
 * load, required inputs inferred from ${input:...}, the revision need
 * derived from ${managedPython}, never read from the file. */
#include "broker.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX (1u << 20)
#define TIMEOUT_MAX_S (7 * 86400)

static int bad(struct sbx_error *e, const char *fmt, const char *a, const char *b)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-allowlist", fmt, a, b);
	return -1;
}

static bool valid_id(const char *id)
{
	if (!((*id >= 'a' && *id <= 'z') || (*id >= '0' && *id <= '9')))
		return false;
	return strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(id) && strlen(id) <= 128;
}

/* Every ${input:X} of text, added to inputs (unique). */
static void infer_inputs(const char *text, json_t *inputs)
{
	for (const char *p = strstr(text, "${"); p; p = strstr(p + 2, "${")) {
		const char *end = strchr(p, '}');
		if (!end)
			return;
		const char *expr = p + 2;
		while (*expr == ' ' || *expr == '\t')
			expr++;
		if (strncmp(expr, "input:", 6) != 0)
			continue;
		char name[128];
		int n = (int)(end - expr - 6);
		snprintf(name, sizeof(name), "%.*s", n < 0 ? 0 : n, expr + 6);
		for (char *q = name + strlen(name); q > name && (q[-1] == ' ' || q[-1] == '\t'); q--)
			q[-1] = '\0';
		bool seen = false;
		size_t i;
		json_t *v;
		json_array_foreach(inputs, i, v)
			seen = seen || !strcmp(json_string_value(v), name);
		if (!seen)
			json_array_append_new(inputs, json_string(name));
	}
}

static int by_string(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

static json_t *sorted(json_t *list)
{
	size_t n = json_array_size(list);
	json_t *items[64] = { 0 }, *out = json_array();
	for (size_t i = 0; i < n && i < 64; i++)
		items[i] = json_array_get(list, i);
	qsort(items, n < 64 ? n : 64, sizeof(items[0]), by_string);
	for (size_t i = 0; i < n && i < 64; i++)
		json_array_append(out, items[i]);
	json_decref(list);
	return out;
}

static int entry(const json_t *w, json_t *out, struct sbx_error *e)
{
	const char *id = json_string_value(json_object_get(w, "id"));
	if (!json_is_object(w) || !id || !valid_id(id))
		return bad(e, "NPU workload id must match ^[a-z0-9][a-z0-9._-]*$: %s%s", id ? id : "(missing)", "");
	for (size_t i = 0; i < json_array_size(out); i++)
		if (!strcmp(json_string_value(json_object_get(json_array_get(out, i), "id")), id))
			return bad(e, "Duplicate NPU workload id in config: %s%s", id, "");
	const char *label = json_string_value(json_object_get(w, "label"));
	const char *description = json_string_value(json_object_get(w, "description"));
	if (!label || !*label)
		return bad(e, "NPU workload %s requires a label%s", id, "");
	if (!description || !*description)
		return bad(e, "NPU workload %s requires a description%s", id, "");
	const json_t *cmd = json_object_get(w, "command");
	if (!json_is_object(cmd))
		return bad(e, "NPU workload config requires command object%s%s", "", "");
	const char *program = json_string_value(json_object_get(cmd, "program"));
	if (!program || !*program)
		return bad(e, "NPU workload config requires command.program: %s%s", id, "");
	const json_t *args = json_object_get(cmd, "args");
	if (args && !json_is_array(args))
		return bad(e, "NPU workload config command args must be an array: %s%s", id, "");
	if (json_array_size(args) > 256)
		return bad(e, "NPU workload %s has more than 256 args%s", id, "");
	json_t *inferred = json_array(), *arglist = json_array();
	infer_inputs(program, inferred);
	bool managed = strstr(program, "${managedPython}") != NULL;
	size_t i;
	json_t *a;
	json_array_foreach(args, i, a) {
		if (!json_is_string(a) || json_string_length(a) == 0) {
			json_decref(inferred);
			json_decref(arglist);
			return bad(e, "NPU workload config command args must be non-empty strings: %s%s", id, "");
		}
		infer_inputs(json_string_value(a), inferred);
		managed = managed || strstr(json_string_value(a), "${managedPython}");
		json_array_append(arglist, a);
	}
	json_t *required = json_object_get(w, "requiredInputs");
	if (json_is_array(required)) {
		json_decref(inferred);
		inferred = json_deep_copy(required);
	} else {
		inferred = sorted(inferred);
	}
	json_array_foreach(inferred, i, a)
		if (!json_is_string(a) || strcmp(json_string_value(a), "configPath") != 0) {
			char what[200];
			snprintf(what, sizeof(what), "%.120s", json_is_string(a) ? json_string_value(a) : "(not a string)");
			json_decref(inferred);
			json_decref(arglist);
			return bad(e, "Unsupported required input for %s: %s", id, what);
		}
	const json_t *timeout = json_object_get(w, "timeoutSeconds");
	if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) < 1 ||
			json_integer_value(timeout) > TIMEOUT_MAX_S)) {
		json_decref(inferred);
		json_decref(arglist);
		return bad(e, "NPU workload %s: timeoutSeconds must be an integer from 1 to 604800%s", id, "");
	}
	const char *phase = json_string_value(json_object_get(w, "phase"));
	json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:b,s:b,s:I}", "id", id, "label", label,
					     "description", description, "phase",
					     phase && !strcmp(phase, "project") ? "project" : "builtin", "program",
					     program, "args", arglist, "requiredInputs", inferred,
					     "requiresEnvironmentRevision", managed, "rejectAf3Intent",
					     json_is_true(json_object_get(w, "rejectAf3Intent")), "timeoutSeconds",
					     (json_int_t)(timeout ? json_integer_value(timeout) : 0)));
	return 0;
}

int broker_parse_allowlist(struct broker *b, const json_t *doc, struct sbx_error *e)
{
	const json_t *list = json_object_get(doc, "workloads");
	if (!json_is_array(list))
		return bad(e, "NPU workload config must contain a workloads array: %s%s", b->config, "");
	b->workloads = json_array();
	size_t i;
	json_t *w;
	json_array_foreach(list, i, w)
		if (entry(w, b->workloads, e) != 0)
			return -1;
	return 0;
}

int broker_load_allowlist(struct broker *b, struct sbx_error *e)
{
	json_t *doc = sbx_json_load(b->config, CONFIG_MAX, e);
	int rc = doc ? broker_parse_allowlist(b, doc, e) : -1;
	json_decref(doc);
	return rc;
}

const json_t *broker_workload(const struct broker *b, const char *id)
{
	size_t i;
	json_t *w;
	json_array_foreach(b->workloads, i, w)
		if (!strcmp(json_string_value(json_object_get(w, "id")), id))
			return w;
	return NULL;
}

json_t *broker_descriptor(const json_t *w)
{
	json_t *d = json_pack("{s:O,s:O,s:O,s:O,s:O}", "description", json_object_get(w, "description"), "id",
			      json_object_get(w, "id"), "label", json_object_get(w, "label"), "phase",
			      json_object_get(w, "phase"), "requiredInputs", json_object_get(w, "requiredInputs"));
	if (json_is_true(json_object_get(w, "requiresEnvironmentRevision")))
		json_object_set_new(d, "requiresEnvironmentRevision", json_true());
	return d;
}

json_t *broker_capability(const struct broker *b)
{
	json_t *list = json_array();
	size_t i;
	json_t *w;
	if (b->enabled)
		json_array_foreach(b->workloads, i, w)
			json_array_append_new(list, broker_descriptor(w));
	return json_pack("{s:b,s:i,s:o}", "enabled", b->enabled, "queueConcurrency", 1, "workloads", list);
}
