/* bundle.c — a skill bundle (runner-api 4 row 30, 5.7) checked whole: ids,
 * revisions, clean paths, canonical base64, sizes and hashes, a SKILL.md in
 * every skill; and the package id, the SHA-256 of its canonical manifest. */
#include "skills.h"
#include "../lib/base64.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/path.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKILLS_MAX 256
#define FILES_MAX 4096
#define PATH_LEN_MAX 2000
#define BYTES "\x01" "bytes" /* a member no JSON text can carry */

static bool skill_id_ok(const char *id)
{
	regex_t re;
	regcomp(&re, "^[a-z0-9]+(-[a-z0-9]+)*$", REG_EXTENDED | REG_NOSUB);
	bool ok = id && strlen(id) <= 128 && regexec(&re, id, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

/* A path a skill's file may have: relative, plain (no empty, "." or ".."
 * segment), at most 2000 bytes, no '\', no control character, no space
 * at either end. */
static bool file_path_ok(const char *p)
{
	size_t n = p ? strlen(p) : 0;
	if (!n || n > PATH_LEN_MAX || strchr(p, '\\') || !sbx_path_plain_relative(p) || strchr(" \t\r\n\v\f", p[0]) ||
	    strchr(" \t\r\n\v\f", p[n - 1]))
		return false;
	for (const char *c = p; *c; c++)
		if ((unsigned char)*c < 0x20)
			return false;
	return true;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "path")),
		      json_string_value(json_object_get(*(json_t *const *)b, "path")));
}

json_t *bundle_file_bytes(const json_t *file)
{
	return json_object_get(file, BYTES);
}

/* Decodes one file into its hidden bytes member; NULL when fine. */
static const char *check_file(json_t *f, const char *id, size_t i, char *why, size_t size)
{
	const char *path = json_string_value(json_object_get(f, "path"));
	const char *content = json_string_value(json_object_get(f, "content"));
	json_t *fsize = json_object_get(f, "size");
	if (!file_path_ok(path) || !content)
		return snprintf(why, size, "skill %s: file %zu needs a clean relative path and content", id, i), why;
	size_t clen = json_string_length(json_object_get(f, "content")), blen = 0;
	unsigned char *bytes = malloc(clen / 4 * 3 + 1);
	if (!bytes || !sbx_base64_decode(content, clen, bytes, &blen)) {
		free(bytes);
		return snprintf(why, size, "skill %s: %s is not canonical base64", id, path), why;
	}
	if (!json_is_integer(fsize) || (size_t)json_integer_value(fsize) != blen) {
		free(bytes);
		return snprintf(why, size, "skill %s: %s size does not match its content", id, path), why;
	}
	char sha[SBX_SHA256_HEX_LEN + 1];
	sbx_sha256_hex(bytes, blen, sha);
	const char *fhash = json_string_value(json_object_get(f, "hash"));
	if (fhash && strcmp(fhash, sha) != 0) {
		free(bytes);
		return snprintf(why, size, "skill %s: %s hash does not match its content", id, path), why;
	}
	json_object_set_new(f, BYTES, json_stringn_nocheck((const char *)bytes, blen));
	free(bytes);
	return NULL;
}

/* Checks one skill and its hash; NULL when fine, else the problem. */
static const char *check_skill(json_t *skill, char *why, size_t size)
{
	const char *id = json_string_value(json_object_get(skill, "id"));
	json_t *rev = json_object_get(skill, "revision"), *files = json_object_get(skill, "files");
	if (!skill_id_ok(id))
		return snprintf(why, size, "skill id must match ^[a-z0-9]+(-[a-z0-9]+)*$"), why;
	if (!json_is_integer(rev) || json_integer_value(rev) < 1)
		return snprintf(why, size, "skill %s: revision must be an integer of at least 1", id), why;
	if (!json_is_array(files) || json_array_size(files) == 0 || json_array_size(files) > FILES_MAX)
		return snprintf(why, size, "skill %s: files must be a non-empty array", id), why;
	size_t n = json_array_size(files), i;
	json_t **sorted = calloc(n, sizeof(*sorted)), *f;
	bool has_skill_md = false;
	const char *problem = sorted ? NULL : "out of memory";
	json_array_foreach(files, i, f) {
		if (problem)
			break;
		problem = check_file(f, id, i, why, size);
		has_skill_md = has_skill_md || (!problem && !strcmp(json_string_value(json_object_get(f, "path")), "SKILL.md"));
		sorted[i] = f;
	}
	if (!problem) {
		qsort(sorted, n, sizeof(*sorted), by_path);
		for (i = 1; !problem && i < n; i++)
			if (!by_path(&sorted[i - 1], &sorted[i]))
				problem = (snprintf(why, size, "skill %s: a path appears twice", id), why);
	}
	if (!problem && !has_skill_md)
		problem = (snprintf(why, size, "skill %s has no SKILL.md", id), why);
	if (problem) {
		free(sorted);
		return problem;
	}
	/* hash = SHA-256 of "<bytes of path>:<path>:<size>:" + content, by path. */
	struct sbx_sha256 *h = sbx_sha256_new();
	for (i = 0; i < n; i++) {
		json_t *b = bundle_file_bytes(sorted[i]);
		skills_hash_file(h, json_string_value(json_object_get(sorted[i], "path")), json_string_length(b));
		sbx_sha256_update(h, json_string_value(b), json_string_length(b));
	}
	free(sorted);
	char sha[SBX_SHA256_HEX_LEN + 1];
	sbx_sha256_final(h, sha);
	if (strcmp(sbx_json_string_or(skill, "hash", ""), sha) != 0)
		return snprintf(why, size, "skill %s: hash does not match its files", id), why;
	return NULL;
}

static int bad(struct sbx_error *e, const char *fmt, const char *what)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-input", fmt, what);
	return -1;
}

int bundle_check(const char *text, size_t len, json_t **out, char id[SBX_SHA256_HEX_LEN + 1], struct sbx_error *e)
{
	json_error_t err;
	char why[600];
	*out = NULL;
	/* The messages sbx-httpd answered with before the store was a stage. */
	json_t *doc = len ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &err) : NULL;
	if (!doc)
		return bad(e, "%s", len ? err.text : "Unexpected end of JSON input");
	if (!json_is_object(doc)) {
		json_decref(doc);
		return bad(e, "%s", "Request body must be a JSON object");
	}
	json_t *skills = json_object_get(doc, "skills"), *s;
	if (!json_is_array(skills) || json_array_size(skills) == 0 || json_array_size(skills) > SKILLS_MAX) {
		json_decref(doc);
		return bad(e, "Skill package integrity check failed: %s", "skills must be a non-empty array");
	}
	size_t i;
	json_array_foreach(skills, i, s) {
		const char *problem = json_is_object(s) ? check_skill(s, why, sizeof(why)) : "a skill must be an object";
		for (size_t k = 0; !problem && k < i; k++)
			if (!strcmp(json_string_value(json_object_get(json_array_get(skills, k), "id")),
				    json_string_value(json_object_get(s, "id"))))
				problem = "a skill id appears twice";
		if (problem) {
			bad(e, "Skill package integrity check failed: %s", problem);
			json_decref(doc);
			return -1;
		}
	}
	skills_package_id(skills, id);
	const char *claimed = json_string_value(json_object_get(doc, "id"));
	if (claimed && strcmp(claimed, id) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-input",
			      "Skill package integrity check failed: the package id is %s, not %.80s", id, claimed);
		json_decref(doc);
		return -1;
	}
	*out = doc;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "id")),
		      json_string_value(json_object_get(*(json_t *const *)b, "id")));
}

void skills_package_id(const json_t *skills, char id[SBX_SHA256_HEX_LEN + 1])
{
	size_t n = json_array_size(skills), i;
	json_t **sorted = calloc(n ? n : 1, sizeof(*sorted)), *manifest = json_array();
	for (i = 0; sorted && i < n; i++)
		sorted[i] = json_array_get(skills, i);
	if (sorted)
		qsort(sorted, n, sizeof(*sorted), by_id);
	for (i = 0; sorted && i < n; i++) {
		json_t *m = json_object();
		json_object_set(m, "hash", json_object_get(sorted[i], "hash"));
		json_object_set(m, "id", json_object_get(sorted[i], "id"));
		json_object_set(m, "revision", json_object_get(sorted[i], "revision"));
		json_t *v = json_object_get(sorted[i], "version");
		json_object_set(m, "version", v ? v : json_null());
		json_array_append_new(manifest, m);
	}
	free(sorted);
	char *text = json_dumps(manifest, JSON_COMPACT | JSON_PRESERVE_ORDER);
	sbx_sha256_hex(text ? text : "", text ? strlen(text) : 0, id);
	free(text);
	json_decref(manifest);
}

void skills_hash_file(struct sbx_sha256 *h, const char *path, size_t size)
{
	char prefix[4200];
	int len = snprintf(prefix, sizeof(prefix), "%zu:%s:%zu:", strlen(path), path, size);
	sbx_sha256_update(h, prefix, (size_t)len < sizeof(prefix) ? (size_t)len : sizeof(prefix) - 1);
}
