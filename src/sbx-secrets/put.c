/* put.c — the commands that write: put (a new secret, or --replace one),
 * rotate (a new value) and rm. Input is checked whole before the store is
 * touched; the read-change-write happens under the store's lock. */
#include "secrets.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((format(printf, 3, 4))) _Noreturn static void refuse(int code, const char *what, const char *fmt, ...)
{
	struct sbx_error e;
	char message[sizeof(e.message)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	sbx_error_set(&e, code, what, "%s", message);
	sbx_die(&e);
}

/* put --json: the document on stdin, its name agreeing with NAME when
 * both are given, "replace" taken out; the times are the store's. */
static bool spec_from_json(const char *name, struct sbx_secret *s)
{
	struct sbx_error e;
	json_t *doc = input_json(), *replace = json_object_get(doc, "replace");
	const char *given = json_string_value(json_object_get(doc, "name"));
	static const char *const stamps[] = { "createdAt", "rotatedAt", "lastUsedAt", NULL };
	for (int i = 0; stamps[i]; i++)
		if (json_object_get(doc, stamps[i])) {
			input_forget(doc);
			refuse(SBX_EXIT_USAGE, "bad-field", "%s: set by the store, not by a put", stamps[i]);
		}
	if (replace && !json_is_boolean(replace)) {
		input_forget(doc);
		refuse(SBX_EXIT_USAGE, "bad-field", "replace: must be a boolean");
	}
	bool replacing = json_is_true(replace);
	json_object_del(doc, "replace");
	if (name && given && strcmp(name, given) != 0) {
		char shown[80];
		snprintf(shown, sizeof(shown), "%.64s", given);
		input_forget(doc);
		refuse(SBX_EXIT_USAGE, "name-mismatch", "name: the document names %s, the command %s", shown, name);
	}
	if (name && !given)
		json_object_set_new(doc, "name", json_string(name));
	int rc = sbx_secret_from_json(doc, s, &e);
	input_forget(doc);
	if (rc != 0)
		sbx_die(&e);
	return replacing;
}

/* put NAME --host ... --env ... (--header | --basic): the flags checked as
 * the JSON fields they stand for, then the value from stdin. */
static void spec_from_flags(const char *name, const struct options *o, struct sbx_secret *s)
{
	struct sbx_error e;
	json_t *hosts = json_array();
	for (int i = 0; i < o->n_hosts; i++)
		json_array_append_new(hosts, json_string(o->hosts[i]));
	json_t *doc = json_pack("{s:s,s:o}", "name", name, "hosts", hosts);
	if (o->env)
		json_object_set_new(doc, "env", json_string(o->env));
	if (o->header)
		json_object_set_new(doc, "header", json_string(o->header));
	if (o->basic)
		json_object_set_new(doc, "basic", json_pack("{s:s}", "username", o->basic));
	int rc = sbx_secret_from_json_meta(doc, s, &e);
	json_decref(doc);
	if (rc != 0)
		sbx_die(&e);
	input_value(s);
}

static void save(int dir, struct sbx_secret *s)
{
	struct sbx_error e;
	if (sbx_secret_save(dir, s, &e) != 0)
		sbx_die(&e);
}

int cmd_put(const char *store, const char *name, const struct options *o)
{
	struct sbx_secret s, old;
	struct sbx_error e;
	bool replace = o->replace;
	if (o->json)
		replace = spec_from_json(name, &s) || replace;
	else
		spec_from_flags(name, o, &s);
	int dir = store_dir(store, true);
	store_lock(dir);
	int rc = sbx_secret_load(dir, s.name, false, &old, &e);
	if (rc == 0 && !replace)
		refuse(SBX_EXIT_USAGE, "exists", "secret %s exists; put --replace replaces it", s.name);
	if (rc == -1 && !replace)
		sbx_die(&e);
	if (rc == SBX_SECRET_UNKNOWN) {
		char **names;
		int n = sbx_secret_list(dir, &names, &e);
		if (n < 0)
			sbx_die(&e);
		sbx_secret_names_free(names, n);
		if (n >= SBX_SECRET_LIST_MAX)
			refuse(SBX_EXIT_POLICY, "too-many-secrets", "the secret store holds %d secrets already", SBX_SECRET_LIST_MAX);
	}
	store_now(s.created);
	s.rotated[0] = s.last_used[0] = '\0';
	if (rc == 0) {
		/* A replaced secret keeps its creation and last use; its value
		 * (perhaps its hosts) changed now. */
		memcpy(s.created, old.created, sizeof(s.created));
		memcpy(s.last_used, old.last_used, sizeof(s.last_used));
		store_now(s.rotated);
	}
	save(dir, &s);
	sbx_secret_free(&s);
	return sbx_json_answer(sbx_secret_meta(&s));
}

/* The store holding name, under its lock, or a refusal naming it. */
static int held(const char *store, const char *name, struct sbx_secret *s)
{
	struct sbx_error e;
	int dir = store_dir(store, false);
	if (dir == SBX_SECRET_NO_STORE)
		refuse(SBX_EXIT_USAGE, "unknown-secret", "unknown secret %s", name);
	store_lock(dir);
	if (sbx_secret_load(dir, name, false, s, &e) != 0)
		sbx_die(&e);
	return dir;
}

int cmd_rotate(const char *store, const char *name, const struct options *o)
{
	struct sbx_secret fresh = { 0 }, s;
	struct sbx_error e;
	if (o->json) {
		static const struct sbx_json_field fields[] = { { "value", SBX_JSON_STRING, true, false } };
		json_t *doc = input_json(), *v = json_object_get(doc, "value");
		int rc = sbx_json_validate(doc, fields, 1, "", &e);
		if (rc == 0)
			rc = sbx_secret_set_value(&fresh, json_string_value(v), json_string_length(v), &e);
		input_forget(doc);
		if (rc != 0)
			sbx_die(&e);
	} else {
		input_value(&fresh);
	}
	int dir = held(store, name, &s);
	s.value = fresh.value;
	s.value_len = fresh.value_len;
	store_now(s.rotated);
	save(dir, &s);
	sbx_secret_free(&s);
	return sbx_json_answer(sbx_secret_meta(&s));
}

int cmd_rm(const char *store, const char *name)
{
	struct sbx_secret s;
	struct sbx_error e;
	int dir = held(store, name, &s);
	if (sbx_secret_remove(dir, name, &e) != 0)
		sbx_die(&e);
	return sbx_json_answer(json_pack("{s:s}", "deleted", name));
}
