/* manage.c — environments: starters bootstrapped, named environments
 * cloned from a base, deleted (revisions kept for audit), resolved for an
 * execution, and their snapshot bytes re-hashed on the way out. */
#include "env.h"
#include "../lib/uuid.h"
#include "../lib/tree_remove.h"
#include "../lib/atomic_file.h"
#include "../lib/env_lease.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/utsname.h>
#include <unistd.h>

static void remove_tree(const char *path)
{
	(void)sbx_remove_tree(path);
}

/* The per-environment lock: mutations exclusive, held across the tool run. */
int env_lock_one(struct envctx *c, const char *id, struct sbx_error *e)
{
	char dir[PATH_MAX];
	if (!env_safe_env_id(id))
		return env_fail(e, SBX_EXIT_USAGE, "%s", "Environment metadata contains an unsafe identifier");
	snprintf(dir, sizeof(dir), "%s/locks", c->root);
	int fd = sbx_env_lease(dir, id, true);
	if (fd < 0)
		env_fail(e, SBX_EXIT_RESOURCE, "cannot lock environment %s", id);
	return fd;
}


static const char *starter_specs(const char *language)
{
	return !strcmp(language, "r") ? STARTER_R : STARTER_PYTHON;
}

int env_bootstrap_starter(struct envctx *c, const char *language, struct sbx_error *e)
{
	char id[32], rev_dir[PATH_MAX], now[32], specs[256];
	snprintf(id, sizeof(id), "starter-%s", language);
	if (c->n_channels == 0)
		return env_fail(e, SBX_EXIT_USAGE, "%s", "Scientific environments require at least one allowed package channel");
	char runtime[64];
	sbx_uuid4("rev-", runtime, sizeof(runtime));
	env_prefix_path(c, id, runtime, rev_dir, sizeof(rev_dir));
	const char *args[48] = { "create", "--yes" };
	int n = 2;
	if (c->cache[0])
		args[n++] = "--offline";
	args[n++] = "--strict-channel-priority";
	args[n++] = "--override-channels";
	args[n++] = "--prefix";
	args[n++] = rev_dir;
	for (int i = 0; i < c->n_channels && n < 40; i++) {
		args[n++] = "--channel";
		args[n++] = c->channels[i];
	}
	snprintf(specs, sizeof(specs), "%s", starter_specs(language));
	args[n++] = "--"; /* what follows is never an option */
	for (char *save = NULL, *t = strtok_r(specs, " ", &save); t && n < 47; t = strtok_r(NULL, " ", &save))
		args[n++] = t;
	args[n] = NULL;
	char parent[PATH_MAX + 96];
	snprintf(parent, sizeof(parent), "%s/revisions/%.64s", c->root, id);
	if (sbx_mkdir_p(parent, 0755, e) != 0)
		return -1;
	env_now(now);
	json_t *env = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "createdAt", now, "currentRevisionId", runtime,
				"id", id, "kind", "starter", "language", language, "name",
				!strcmp(language, "r") ? "Starter R" : "Starter Python", "updatedAt", now, "status", "ready",
				"runtimeRevisionId", runtime);
	json_t *channels = json_array();
	for (int i = 0; i < c->n_channels; i++)
		json_array_append_new(channels, json_string(c->channels[i]));
	json_t *rev = NULL;
	json_t *no_changes = json_array();
	if (env_micromamba(c, args, NULL, e) == 0 && (rev = env_record_revision(c, env, rev_dir, channels, no_changes, NULL, e)))
		env_keep_command(rev, c->provisioner, args);
	json_decref(no_changes);
	json_decref(channels);
	if (!rev) {
		json_decref(env);
		remove_tree(parent);
		return -1;
	}
	json_object_set(env, "currentRevisionId", json_object_get(rev, "id"));
	json_array_append_new(json_object_get(c->catalog, "revisions"), rev);
	json_array_append_new(json_object_get(c->catalog, "environments"), env);
	return env_catalog_save(c, e);
}

static json_t *public_env(json_t *env)
{
	return json_deep_copy(env);
}

json_t *env_create(struct envctx *c, const char *raw_name, const char *language, const char *base,
		   struct sbx_error *e)
{
	char name[128], base_id[64], id[64], runtime[64], prefix[PATH_MAX], base_prefix[PATH_MAX], now[32];
	if (env_valid_name(raw_name, name, sizeof(name), e) != 0)
		return NULL;
	if (strcmp(language, "python") != 0 && strcmp(language, "r") != 0) {
		env_fail(e, SBX_EXIT_USAGE, "Unsupported environment language: %s", language);
		return NULL;
	}
	snprintf(base_id, sizeof(base_id), "%s", base && *base ? base : !strcmp(language, "r") ? "starter-r" : "starter-python");
	if (env_lock(c, true, e) != 0)
		return NULL;
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(c->catalog, "environments"), i, v)
		if (!strcasecmp(sbx_json_string_or(v, "name", ""), name)) {
			env_fail(e, SBX_EXIT_USAGE, "Environment name already exists: %s", name);
			return NULL;
		}
	if (!strcmp(base_id, "starter-r") && !env_find(c, "environments", "starter-r") &&
	    env_bootstrap_starter(c, "r", e) != 0)
		return NULL;
	json_t *b = env_find(c, "environments", base_id);
	if (!b || !env_safe_env_id(base_id)) {
		env_fail(e, SBX_EXIT_USAGE, "Unknown base environment: %s", base_id);
		return NULL;
	}
	if (strcmp(sbx_json_string_or(b, "language", ""), language) != 0) {
		env_fail(e, SBX_EXIT_USAGE, "%s", "Base environment language does not match the requested language");
		return NULL;
	}
	if (strcmp(sbx_json_string_or(b, "status", "ready"), "ready") != 0) {
		env_fail(e, SBX_EXIT_USAGE, "Base environment is not ready: %s", base_id);
		return NULL;
	}
	sbx_uuid4("task-", id, sizeof(id));
	sbx_uuid4("rev-", runtime, sizeof(runtime));
	env_prefix_path(c, id, runtime, prefix, sizeof(prefix));
	env_prefix_path(c, base_id, sbx_json_string_or(b, "runtimeRevisionId", sbx_json_string_or(b, "currentRevisionId", "")),
			base_prefix, sizeof(base_prefix));
	char parent[PATH_MAX + 96];
	snprintf(parent, sizeof(parent), "%s/revisions/%.64s", c->root, id);
	if (sbx_mkdir_p(parent, 0755, e) != 0)
		return NULL;
	const char *args[12] = { "create", "--yes" };
	int n = 2;
	if (c->cache[0])
		args[n++] = "--offline";
	args[n++] = "--clone";
	args[n++] = base_prefix;
	args[n++] = "--prefix";
	args[n++] = prefix;
	args[n] = NULL;
	env_now(now);
	json_t *env = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "createdAt", now, "currentRevisionId", runtime,
				"id", id, "kind", "task", "language", language, "name", name, "updatedAt", now, "status",
				"ready", "runtimeRevisionId", runtime);
	json_t *base_rev = env_find(c, "revisions", sbx_json_string_or(b, "currentRevisionId", ""));
	json_t *rev = NULL;
	json_t *none = json_array();
	if (env_micromamba(c, args, NULL, e) == 0)
		rev = env_record_revision(c, env, prefix, json_object_get(base_rev, "channels") ? json_object_get(base_rev, "channels")
											: none,
				      none, json_object_get(base_rev, "localWheels"), e);
	json_decref(none);
	if (rev)
		env_keep_command(rev, c->provisioner, args);
	if (!rev) {
		json_decref(env);
		remove_tree(parent);
		return NULL;
	}
	json_object_set(env, "currentRevisionId", json_object_get(rev, "id"));
	json_array_append_new(json_object_get(c->catalog, "revisions"), rev);
	json_array_append_new(json_object_get(c->catalog, "environments"), env);
	if (env_catalog_save(c, e) != 0)
		return NULL;
	return public_env(env);
}


int env_delete(struct envctx *c, const char *id, struct sbx_error *e)
{
	if (!env_safe_env_id(id))
		return env_fail(e, SBX_EXIT_USAGE, "%s", "Environment metadata contains an unsafe identifier");
	if (!strncmp(id, "starter-", 8))
		return env_fail(e, SBX_EXIT_USAGE, "%s", "Starter environments cannot be deleted");
	int lock = env_lock_one(c, id, e);
	if (lock < 0 || env_lock(c, true, e) != 0) {
		if (lock >= 0)
			close(lock);
		return -1;
	}
	json_t *envs = json_object_get(c->catalog, "environments");
	size_t i;
	json_t *v;
	int rc = env_fail(e, SBX_EXIT_USAGE, "Unknown environment: %s", id);
	json_array_foreach(envs, i, v)
		if (!strcmp(sbx_json_string_or(v, "id", ""), id)) {
			json_array_remove(envs, i);
			rc = env_catalog_save(c, e);
			break;
		}
	env_unlock(c);
	if (rc == 0) {
		char dir[PATH_MAX + 32];
		snprintf(dir, sizeof(dir), "%s/revisions/%s", c->root, id);
		remove_tree(dir); /* revisions and snapshots stay in the catalog, for audit */
	}
	close(lock);
	return rc;
}

json_t *env_resolve(struct envctx *c, const char *revision, const char *environment, const char *language,
		    struct sbx_error *e)
{
	if (env_lock(c, false, e) != 0)
		return NULL;
	env_unlock(c);
	json_t *env = NULL, *rev = NULL;
	if (revision && *revision) {
		if (!env_safe_rev_id(revision) || !(rev = env_find(c, "revisions", revision))) {
			env_fail(e, SBX_EXIT_USAGE, "%s", "Unknown environment revision; select a current environment");
			return NULL;
		}
		env = env_find(c, "environments", sbx_json_string_or(rev, "environmentId", ""));
		if (!env || strcmp(sbx_json_string_or(env, "currentRevisionId", ""), revision) != 0) {
			env_fail(e, SBX_EXIT_USAGE, "%s", "Historical environment revisions are audit-only; select an environment ID to use its latest state");
			return NULL;
		}
	} else if (environment && *environment) {
		if (!env_safe_env_id(environment) || !(env = env_find(c, "environments", environment))) {
			env_fail(e, SBX_EXIT_USAGE, "Unknown environment: %s", environment);
			return NULL;
		}
	} else {
		char id[32];
		snprintf(id, sizeof(id), "starter-%s", language);
		env = env_find(c, "environments", id);
		if (!env) {
			env_fail(e, SBX_EXIT_USAGE, "%s", "Scientific environments are not configured; install them in System Settings");
			return NULL;
		}
	}
	if (strcmp(sbx_json_string_or(env, "language", ""), language) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "environment", "Environment revision %s is %s, not %s",
			      sbx_json_string_or(env, "currentRevisionId", "?"), sbx_json_string_or(env, "language", "?"), language);
		return NULL;
	}
	if (strcmp(sbx_json_string_or(env, "status", "ready"), "ready") != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "environment", "Environment %s is not ready: %s", sbx_json_string_or(env, "id", "?"),
			      sbx_json_string_or(env, "error", sbx_json_string_or(env, "status", "?")));
		return NULL;
	}
	char prefix[PATH_MAX], interpreter[PATH_MAX + 16];
	env_prefix_path(c, sbx_json_string_or(env, "id", ""),
			sbx_json_string_or(env, "runtimeRevisionId", sbx_json_string_or(env, "currentRevisionId", "")), prefix,
			sizeof(prefix));
	snprintf(interpreter, sizeof(interpreter), "%s/bin/%s", prefix, !strcmp(language, "r") ? "R" : "python");
	return json_pack("{s:s,s:O,s:O,s:s,s:s}", "prefix", prefix, "environmentId", json_object_get(env, "id"),
			 "revisionId", json_object_get(env, "currentRevisionId"), "language", language, "interpreter",
			 interpreter);
}

int env_snapshot_bytes(struct envctx *c, const char *rev, char **bytes, size_t *len, struct sbx_error *e)
{
	if (!env_safe_rev_id(rev))
		return env_fail(e, SBX_EXIT_USAGE, "%s", "Environment metadata contains an unsafe identifier");
	if (env_lock(c, false, e) != 0)
		return -1;
	env_unlock(c);
	json_t *r = env_find(c, "revisions", rev);
	if (!r)
		return env_fail(e, SBX_EXIT_USAGE, "Unknown environment revision: %s", rev);
	char path[PATH_MAX + 96], hash[65];
	snprintf(path, sizeof(path), "%s/snapshots/%s.json", c->root, rev);
	FILE *f = fopen(path, "re");
	if (!f)
		return env_fail(e, SBX_EXIT_INTEGRITY, "Environment revision snapshot is corrupt: %s", rev);
	*bytes = malloc(16u << 20);
	*len = *bytes ? fread(*bytes, 1, 16u << 20, f) : 0;
	fclose(f);
	sbx_sha256_hex(*bytes ? *bytes : "", *len, hash);
	if (!*bytes || strcmp(hash, sbx_json_string_or(json_object_get(r, "snapshot"), "hash", ""))) {
		free(*bytes);
		*bytes = NULL;
		return env_fail(e, SBX_EXIT_INTEGRITY, "Environment revision snapshot is corrupt: %s", rev);
	}
	return 0;
}
