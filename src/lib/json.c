/* json.c — strict parsing, schema validation and compact printing. */
#include "json.h"
#include "exitcodes.h"
#include "io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

json_t *sbx_json_parse(const char *buf, size_t len, const char *source,
		       struct sbx_error *e)
{
	json_error_t jerr;
	json_t *v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);

	if (!v) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-json", "%s:%d:%d: %s",
			      source, jerr.line, jerr.column, jerr.text);
		return NULL;
	}
	return v;
}

json_t *sbx_json_load(const char *path, size_t cap, struct sbx_error *e)
{
	size_t len;
	char *buf = sbx_read_file_capped(path, cap, &len, e);

	if (!buf)
		return NULL;
	json_t *v = sbx_json_parse(buf, len, strcmp(path, "-") == 0 ? "stdin" : path, e);
	free(buf);
	return v;
}

const char *sbx_json_kind_name(enum sbx_json_kind kind)
{
	switch (kind) {
	case SBX_JSON_STRING: return "a string";
	case SBX_JSON_INTEGER: return "an integer";
	case SBX_JSON_NUMBER: return "a number";
	case SBX_JSON_BOOL: return "a boolean";
	case SBX_JSON_OBJECT: return "an object";
	case SBX_JSON_ARRAY: return "an array";
	case SBX_JSON_ANY: return "a value";
	}
	return "a value";
}

static bool kind_matches(const json_t *v, enum sbx_json_kind kind)
{
	switch (kind) {
	case SBX_JSON_STRING: return json_is_string(v);
	case SBX_JSON_INTEGER: return json_is_integer(v);
	case SBX_JSON_NUMBER: return json_is_number(v);
	case SBX_JSON_BOOL: return json_is_boolean(v);
	case SBX_JSON_OBJECT: return json_is_object(v);
	case SBX_JSON_ARRAY: return json_is_array(v);
	case SBX_JSON_ANY: return true;
	}
	return false;
}

static const struct sbx_json_field *find_field(const struct sbx_json_field *fields,
					       size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(fields[i].name, name) == 0)
			return &fields[i];
	return NULL;
}

/* "where.name", or just "name" at the root. */
static void field_path(char *out, size_t size, const char *where, const char *name)
{
	if (where && *where)
		snprintf(out, size, "%s.%s", where, name);
	else
		snprintf(out, size, "%s", name);
}

int sbx_json_validate(const json_t *obj, const struct sbx_json_field *fields,
		      size_t nfields, const char *where, struct sbx_error *e)
{
	const char *key;
	json_t *value;
	char path[256];

	if (!json_is_object(obj)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-input", "%s must be an object",
			      where && *where ? where : "the document");
		return -1;
	}
	json_object_foreach((json_t *)obj, key, value) {
		const struct sbx_json_field *f = find_field(fields, nfields, key);
		/* Cap what an attacker-chosen key can put into the message. */
		field_path(path, sizeof(path), where, key);
		if (!f) {
			sbx_error_set(e, SBX_EXIT_USAGE, "unknown-field", "%.200s: unknown field", path);
			return -1;
		}
		if (json_is_null(value) && f->nullable)
			continue;
		if (!kind_matches(value, f->kind)) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "%s: must be %s", path,
				      sbx_json_kind_name(f->kind));
			return -1;
		}
	}
	for (size_t i = 0; i < nfields; i++) {
		if (fields[i].required && !json_object_get(obj, fields[i].name)) {
			field_path(path, sizeof(path), where, fields[i].name);
			sbx_error_set(e, SBX_EXIT_USAGE, "missing-field", "%s: required field is missing", path);
			return -1;
		}
	}
	return 0;
}

int sbx_json_answer(json_t *v)
{
	int rc = v && sbx_json_print(stdout, v) == 0 ? SBX_EXIT_OK : SBX_EXIT_INTERNAL;
	json_decref(v);
	return rc;
}

int sbx_json_print(FILE *out, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	if (!s)
		return -1;
	int rc = fprintf(out, "%s\n", s) < 0 ? -1 : 0;
	free(s);
	if (fflush(out) != 0)
		rc = -1;
	return rc;
}

const char *sbx_json_string_or(const json_t *obj, const char *key, const char *dflt)
{
	const json_t *v = json_object_get(obj, key);
	return json_is_string(v) ? json_string_value(v) : dflt;
}

bool sbx_json_bool_or(const json_t *obj, const char *key, bool dflt)
{
	const json_t *v = json_object_get(obj, key);
	return json_is_boolean(v) ? json_is_true(v) : dflt;
}

int sbx_utf8_sequence(const unsigned char *p, size_t avail)
{
	if (avail == 0)
		return -1;
	if (p[0] < 0x80)
		return 1;
	int n = (p[0] & 0xE0) == 0xC0 ? 2 : (p[0] & 0xF0) == 0xE0 ? 3 : (p[0] & 0xF8) == 0xF0 ? 4 : 0;
	if (n == 0 || p[0] == 0xC0 || p[0] == 0xC1 || p[0] > 0xF4)
		return 0;
	for (int i = 1; i < n; i++) {
		if ((size_t)i >= avail)
			return -1;
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		/* Overlongs, surrogates and code points above U+10FFFF. */
		if (i == 1 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F) ||
			       (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] > 0x8F)))
			return 0;
	}
	return n;
}

json_t *sbx_json_stringn_lossy(const char *s, size_t len)
{
	char *out = malloc(len * 3 + 1);
	size_t o = 0;

	if (!out)
		return json_null();
	for (const unsigned char *p = (const unsigned char *)s, *end = p + len; p < end;) {
		int n = sbx_utf8_sequence(p, (size_t)(end - p));
		if (n <= 0) {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			p++;
		} else {
			memcpy(out + o, p, (size_t)n);
			o += (size_t)n;
			p += n;
		}
	}
	json_t *v = json_stringn(out, o);
	free(out);
	return v ? v : json_null();
}

json_t *sbx_json_string_lossy(const char *s)
{
	return sbx_json_stringn_lossy(s, strlen(s));
}

json_t *sbx_json_reading(const char *text)
{
	char *end;
	while (*text == ' ' || *text == '\t')
		text++;
	double v = strtod(text, &end);
	if (end == text || !isfinite(v))
		return json_null();
	while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
		end++;
	if (*end)
		return json_null();
	/* Whole numbers within a double's exact range are integers. */
	if (v >= -9007199254740992.0 && v <= 9007199254740992.0 && v == (double)(long long)v)
		return json_integer((json_int_t)v);
	return json_real(v);
}

json_t *sbx_json_del_each(json_t *v, const char *key)
{
	if (json_is_object(v)) {
		json_object_del(v, key);
		const char *k;
		json_t *member;
		json_object_foreach(v, k, member)
			sbx_json_del_each(member, key);
	}
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item)
		sbx_json_del_each(item, key);
	return v;
}
