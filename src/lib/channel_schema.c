/* channel_schema.c — one strict schema per message type of the worker
 * channel (documented in sbx-formats(5)): known fields only, each of its
 * kind, and the value checks a supervisor relies on. */
#include "channel.h"
#include "json.h"
#include "path.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define F(name, kind, required) { name, SBX_JSON_##kind, required, false }

static const struct sbx_json_field state_f[] = { F("type", STRING, true), F("state", STRING, true), F("message", STRING, false) };
static const struct sbx_json_field progress_f[] = { F("type", STRING, true), F("progress", NUMBER, true), F("message", STRING, false) };
static const struct sbx_json_field diagnostic_f[] = { F("type", STRING, true), F("message", STRING, true), F("data", OBJECT, false) };
static const struct sbx_json_field warning_f[] = { F("type", STRING, true), F("message", STRING, true), F("code", STRING, false) };
static const struct sbx_json_field metric_f[] = { F("type", STRING, true), F("name", STRING, true), F("value", NUMBER, true),
						  F("step", INTEGER, false), F("unit", STRING, false) };
static const struct sbx_json_field metrics_f[] = { F("type", STRING, true), F("points", ARRAY, true) };
static const struct sbx_json_field point_f[] = { F("name", STRING, true), F("value", NUMBER, true), F("step", INTEGER, false) };
static const struct sbx_json_field checkpoint_f[] = { F("type", STRING, true), F("path", STRING, true), F("step", INTEGER, false) };
static const struct sbx_json_field params_f[] = { F("type", STRING, true), F("params", OBJECT, true) };
static const struct sbx_json_field tags_f[] = { F("type", STRING, true), F("tags", OBJECT, true) };
static const struct sbx_json_field user_log_f[] = { F("type", STRING, true), F("level", STRING, true), F("message", STRING, true) };
static const struct sbx_json_field media_f[] = { F("type", STRING, true), F("path", STRING, true), F("kind", STRING, false),
						 F("caption", STRING, false) };
static const struct sbx_json_field result_f[] = { F("type", STRING, true), F("summary", ANY, false) };
static const struct sbx_json_field error_f[] = { F("type", STRING, true), F("message", STRING, true), F("code", STRING, false) };

#define ROW(t, f, term) { t, f, sizeof(f) / sizeof((f)[0]), term }
static const struct {
	const char *type;
	const struct sbx_json_field *fields;
	size_t n;
	bool terminal;
} schemas[] = {
	ROW("state", state_f, false), ROW("progress", progress_f, false), ROW("diagnostic", diagnostic_f, false),
	ROW("warning", warning_f, false), ROW("metric", metric_f, false), ROW("metrics", metrics_f, false),
	ROW("checkpoint", checkpoint_f, false), ROW("params", params_f, false), ROW("tags", tags_f, false),
	ROW("user_log", user_log_f, false), ROW("media", media_f, false), ROW("result", result_f, true),
	ROW("error", error_f, true),
};

static const char *const log_levels[] = { "debug", "info", "warning", "error", NULL };

#define MAX_NAME 256
#define MAX_TEXT (64u * 1024)
#define MAX_POINTS 10000

static int fail(char *why, size_t size, const char *fmt, const char *a)
{
	snprintf(why, size, fmt, a);
	return -1;
}

static bool scalar_map(const json_t *o, bool strings_only)
{
	const char *k;
	json_t *v;
	if (json_object_size(o) > 1000)
		return false;
	json_object_foreach((json_t *)o, k, v) {
		if (strlen(k) > MAX_NAME)
			return false;
		if (strings_only ? !json_is_string(v) : !(json_is_string(v) || json_is_number(v) || json_is_boolean(v)))
			return false;
		if (json_is_string(v) && json_string_length(v) > MAX_TEXT)
			return false;
	}
	return true;
}

static bool finite_number(const json_t *v)
{
	return json_is_integer(v) || (json_is_real(v) && isfinite(json_real_value(v)));
}

int sbx_channel_check(const json_t *m, const char **type, char *why, size_t size)
{
	struct sbx_error e;
	const char *t = json_string_value(json_object_get(m, "type"));
	size_t i;

	if (!json_is_object(m))
		return fail(why, size, "%s", "a frame is not a JSON object");
	if (!t)
		return fail(why, size, "%s", "a message without a string \"type\"");
	for (i = 0; i < sizeof(schemas) / sizeof(schemas[0]); i++)
		if (!strcmp(schemas[i].type, t))
			break;
	if (i == sizeof(schemas) / sizeof(schemas[0]))
		return fail(why, size, "unknown message type '%.32s'", t);
	*type = schemas[i].type;
	if (sbx_json_validate(m, schemas[i].fields, schemas[i].n, schemas[i].type, &e) != 0)
		return fail(why, size, "%s", e.message);
	/* Value checks beyond kinds. */
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)m, k, v)
		if (json_is_string(v) && json_string_length(v) > MAX_TEXT) {
			snprintf(why, size, "%s.%.64s: longer than 64 KiB", t, k);
			return -1;
		}
	if (!strcmp(t, "progress")) {
		double p = json_number_value(json_object_get(m, "progress"));
		if (!finite_number(json_object_get(m, "progress")) || p < 0 || p > 1)
			return fail(why, size, "%s", "progress.progress: must be a number from 0 to 1");
	} else if (!strcmp(t, "metric")) {
		if (!finite_number(json_object_get(m, "value")) || strlen(json_string_value(json_object_get(m, "name"))) > MAX_NAME)
			return fail(why, size, "%s", "metric: name at most 256 bytes, value a finite number");
	} else if (!strcmp(t, "metrics")) {
		json_t *points = json_object_get(m, "points"), *p;
		if (json_array_size(points) > MAX_POINTS)
			return fail(why, size, "%s", "metrics.points: more than 10000 points");
		json_array_foreach(points, i, p)
			if (sbx_json_validate(p, point_f, 3, "metrics.points[]", &e) != 0 ||
			    !finite_number(json_object_get(p, "value")))
				return fail(why, size, "%s", "metrics.points[]: {name, value (finite), step?} only");
	} else if (!strcmp(t, "params") || !strcmp(t, "tags")) {
		if (!scalar_map(json_object_get(m, t), !strcmp(t, "tags")))
			return fail(why, size, "%s: at most 1000 entries of scalar values (tags: strings)", t);
	} else if (!strcmp(t, "user_log")) {
		const char *level = json_string_value(json_object_get(m, "level"));
		size_t l;
		for (l = 0; log_levels[l] && strcmp(log_levels[l], level); l++)
			;
		if (!log_levels[l])
			return fail(why, size, "%s", "user_log.level: debug, info, warning or error");
	} else if (!strcmp(t, "checkpoint") || !strcmp(t, "media")) {
		const char *path = json_string_value(json_object_get(m, "path"));
		if (strlen(path) > 1024 || !sbx_path_plain_relative(path))
			return fail(why, size, "%s.path: a relative path inside its scratch folder", t);
	}
	return schemas[i].terminal ? 1 : 0;
}
