/* json.h — strict JSON over jansson: duplicate keys rejected, errors with
 * line and column, and a schema table per input that names bad fields. */
#ifndef SBX_JSON_H
#define SBX_JSON_H

#include "error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#define SBX_JSON_MAX_INPUT (4u << 20) /* default cap for one JSON document */

/* Parses one JSON document; `source` names it in errors ("spec.json:3:7: ..."). */
json_t *sbx_json_parse(const char *buf, size_t len, const char *source,
		       struct sbx_error *e);
/* Reads and parses a file ("-" = stdin) of at most cap bytes. */
json_t *sbx_json_load(const char *path, size_t cap, struct sbx_error *e);

enum sbx_json_kind {
	SBX_JSON_STRING,
	SBX_JSON_INTEGER,
	SBX_JSON_NUMBER, /* integer or real */
	SBX_JSON_BOOL,
	SBX_JSON_OBJECT,
	SBX_JSON_ARRAY,
	SBX_JSON_ANY,
};

/* One row of an input schema: the single source of truth for a field. */
struct sbx_json_field {
	const char *name;
	enum sbx_json_kind kind;
	bool required;
	bool nullable;
};

/* Checks that obj is an object with only the listed fields, each required
 * one present and every present one of its kind. `where` is the path of
 * obj in the document ("" for the root, "spec.env" ...). */
int sbx_json_validate(const json_t *obj, const struct sbx_json_field *fields,
		      size_t nfields, const char *where, struct sbx_error *e);

/* The name of a kind for error messages ("a string", "an integer"). */
const char *sbx_json_kind_name(enum sbx_json_kind kind);

/* Prints v compactly followed by a newline; 0 or -1. */
int sbx_json_print(FILE *out, const json_t *v);
/* A stage's answer: v (taken) printed on stdout; the exit code, 0, or 5
 * (internal) when v is NULL or could not be written. */
int sbx_json_answer(json_t *v);

/* A JSON string of s; bytes that are not valid UTF-8 become U+FFFD, so
 * text from other programs (stderr lines) can always be reported. */
json_t *sbx_json_string_lossy(const char *s);
/* The same for len bytes that may hold NUL (written as \u0000). */
json_t *sbx_json_stringn_lossy(const char *s, size_t len);
/* The UTF-8 sequence at p (avail bytes there): its length when valid, 0
 * when invalid, -1 when p holds only the start of a valid one. */
int sbx_utf8_sequence(const unsigned char *p, size_t avail);
/* Deletes key from every object in v, at any depth (host internals kept
 * out of API answers). Returns v. */
json_t *sbx_json_del_each(json_t *v, const char *key);
/* A tool's reading: an integer or a real for a number (white space around
 * it allowed), null for "-", "NA", "[N/A]" and anything else. */
json_t *sbx_json_reading(const char *text);

/* Convenience getters that treat a missing or null member as the default. */
const char *sbx_json_string_or(const json_t *obj, const char *key, const char *dflt);
bool sbx_json_bool_or(const json_t *obj, const char *key, bool dflt);

#endif
