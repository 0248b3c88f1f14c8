/* check.c — before a run: every secret it names is held, may only be sent
 * where its network policy lets the sandbox go, and sets an env name no
 * other of them sets; --touch records the use. */
#include "secrets.h"
#include "../lib/diag.h"
#include "../lib/egress_policy.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLICY_MAX (1u << 20)

/* The policy: 0 (a domain allowlist in *p), 1 (no network: "none", the
 * JSON string "none", or a mode other than domain-allowlist), or exits. */
static int load_policy(const char *path, struct sbx_egress_policy *p)
{
	struct sbx_error e;
	if (!strcmp(path, "none"))
		return 1;
	json_error_t je;
	size_t len;
	char *text = sbx_read_file_capped(path, POLICY_MAX, &len, &e);
	if (!text)
		sbx_die(&e);
	json_t *doc = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!doc) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "bad-policy", "--policy %s:%d:%d: %s", path, je.line, je.column, je.text);
		sbx_die(&e);
	}
	const char *mode = json_string_value(json_object_get(doc, "mode"));
	int rc = json_is_string(doc) && !strcmp(json_string_value(doc), "none") ? 1
		 : json_is_object(doc) && mode && strcmp(mode, "domain-allowlist") != 0 ? 1
		 : sbx_egress_policy_parse(doc, p, &e);
	json_decref(doc);
	if (rc < 0)
		sbx_die(&e);
	return rc;
}

/* Whether the policy lets the sandbox reach every host an entry of a
 * secret names: an exact entry as the gateway would match it (no port on
 * the secret needs a policy entry with no port); *.D only under a policy
 * wildcard *.X with D equal to X or below it. */
static bool covered(const struct sbx_egress_policy *p, const char *text)
{
	struct sbx_egress_entry s;
	char why[300];
	if (sbx_egress_parse_entry(text, &s, why, sizeof(why)) != 0)
		return false;
	if (!s.wildcard) {
		struct sbx_egress_target t = { .port = s.port };
		memcpy(t.host, s.host, sizeof(t.host));
		return sbx_egress_matches(p, &t);
	}
	size_t d = strlen(s.host);
	for (size_t i = 0; i < p->n; i++) {
		const struct sbx_egress_entry *x = &p->entries[i];
		size_t n = strlen(x->host);
		if (!x->wildcard || (x->port && x->port != s.port))
			continue;
		if (!strcmp(s.host, x->host) || (d > n + 1 && s.host[d - n - 1] == '.' && !strcmp(s.host + d - n, x->host)))
			return true;
	}
	return false;
}

static void refuse(struct sbx_error *e, struct sbx_egress_policy *p)
{
	sbx_egress_policy_free(p);
	sbx_die(e);
}

int cmd_check(const char *store, char **names, int n, const struct options *o)
{
	struct sbx_egress_policy p = { 0 };
	struct sbx_secret *s = calloc((size_t)(n ? n : 1), sizeof(*s));
	struct sbx_error e;
	if (!s) {
		sbx_error_set(&e, SBX_EXIT_INTERNAL, "out-of-memory", "check: out of memory");
		sbx_die(&e);
	}
	for (int i = 0; i < n; i++) {
		if (!sbx_secret_name_ok(names[i])) {
			sbx_error_set(&e, SBX_EXIT_USAGE, "unknown-secret", "unknown secret %.64s", names[i]);
			sbx_die(&e);
		}
		for (int j = 0; j < i; j++)
			if (!strcmp(names[i], names[j])) {
				sbx_error_set(&e, SBX_EXIT_USAGE, "bad-input", "secret %s is named twice", names[i]);
				sbx_die(&e);
			}
	}
	bool none = load_policy(o->policy, &p) == 1;
	if (none && n) {
		sbx_error_set(&e, SBX_EXIT_POLICY, "secrets-need-network",
			      "secrets need networkPolicy domain-allowlist (secret %s was asked for)", names[0]);
		sbx_error_remedy(&e, "Secrets are injected by the egress gateway: grant domain-allowlist network access to their hosts.");
		sbx_die(&e);
	}
	int dir = n ? store_dir(store, o->touch) : -1;
	if (dir == SBX_SECRET_NO_STORE) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "unknown-secret", "unknown secret %s", names[0]);
		refuse(&e, &p);
	}
	if (o->touch)
		store_lock(dir);
	for (int i = 0; i < n; i++) {
		if (sbx_secret_load(dir, names[i], o->touch, &s[i], &e) != 0)
			refuse(&e, &p);
		for (int h = 0; h < s[i].n_hosts; h++)
			if (!covered(&p, s[i].hosts[h])) {
				sbx_error_set(&e, SBX_EXIT_POLICY, "secret-host-refused",
					      "secret %s may be sent to %s, which the network policy does not allow", names[i],
					      s[i].hosts[h]);
				sbx_error_remedy(&e, "Allow %s in networkAccess.allowedDomains (a policy entry that pins a port covers only a secret host pinned to it), or narrow the secret's hosts.",
						 s[i].hosts[h]);
				refuse(&e, &p);
			}
		for (int j = 0; j < i; j++)
			if (!strcmp(s[i].env, s[j].env)) {
				sbx_error_set(&e, SBX_EXIT_USAGE, "duplicate-env", "secrets %s and %s both set env %s", names[j],
					      names[i], s[i].env);
				refuse(&e, &p);
			}
	}
	sbx_egress_policy_free(&p);
	json_t *out = json_array();
	for (int i = 0; i < n; i++) {
		if (o->touch) {
			store_now(s[i].last_used);
			if (sbx_secret_save(dir, &s[i], &e) != 0)
				sbx_die(&e);
			sbx_secret_free(&s[i]);
		}
		json_t *meta = sbx_secret_meta(&s[i]);
		json_array_append_new(out, json_pack("{s:s,s:s,s:O}", "name", s[i].name, "env", s[i].env, "hosts",
						     json_object_get(meta, "hosts")));
		json_decref(meta);
	}
	free(s);
	return sbx_json_answer(json_pack("{s:o}", "secrets", out));
}
