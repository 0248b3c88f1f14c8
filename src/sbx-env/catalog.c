/* catalog.c — the layout under <data>/scientific-envs, the catalog (pretty
 * JSON, saved atomically, 0600) and its lock, ids and prefix paths. */
#include "env.h"
#include "../lib/uuid.h"
#include "../lib/atomic_file.h"
#include "../lib/clock.h"
#include "../lib/datadir.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

void env_now(char out[32])
{
	sbx_iso_time(sbx_wall_ms(), out);
}

static void channels_from_env(struct envctx *c)
{
	const char *v = getenv("SCIENCE_AGENT_SCIENTIFIC_CHANNELS");
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", v && *v ? v : "conda-forge");
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && c->n_channels < 16; t = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*t))
			t++;
		size_t n = strlen(t);
		while (n && isspace((unsigned char)t[n - 1]))
			t[--n] = '\0';
		if (n)
			snprintf(c->channels[c->n_channels++], sizeof(c->channels[0]), "%s", t);
	}
}

int env_open(struct envctx *c, struct sbx_error *e)
{
	memset(c, 0, sizeof(*c));
	c->lock_fd = -1;
	if (sbx_data_dir(c->data, sizeof(c->data)) != 0 ||
	    sbx_data_path(c->data, SBX_DATA_SCIENTIFIC_ENVS, NULL, c->root, sizeof(c->root)) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "the data directory path is too long");
		return -1;
	}
	const char *p = getenv("SCIENCE_AGENT_PROVISIONER_PATH");
	c->managed = !(p && *p);
	if (c->managed)
		snprintf(c->provisioner, sizeof(c->provisioner), "%s/bin/micromamba", c->root);
	else
		snprintf(c->provisioner, sizeof(c->provisioner), "%s", p);
	const char *cache = getenv("SCIENCE_AGENT_PACKAGE_CACHE_DIR");
	snprintf(c->cache, sizeof(c->cache), "%s", cache ? cache : "");
	const char *t = getenv("SBX_ENV_TOOL_TIMEOUT_S");
	c->tool_timeout_s = t && atoi(t) > 0 ? atoi(t) : 3600;
	channels_from_env(c);
	static const char *const dirs[] = { "", "/revisions", "/snapshots", "/wheels", "/bin", "/provisioner/pkgs", "/locks" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[PATH_MAX + 32];
		snprintf(path, sizeof(path), "%s%s", c->root, dirs[i]);
		if (sbx_mkdir_p(path, 0755, e) != 0)
			return -1;
	}
	return 0;
}

int env_lock(struct envctx *c, bool exclusive, struct sbx_error *e)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/locks/catalog.lock", c->root);
	if (c->lock_fd < 0 && (c->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "lock", "%s: %s", path, strerror(errno));
		return -1;
	}
	while (flock(c->lock_fd, exclusive ? LOCK_EX : LOCK_SH) != 0)
		if (errno != EINTR) {
			sbx_error_set(e, SBX_EXIT_RESOURCE, "lock", "%s: %s", path, strerror(errno));
			return -1;
		}
	return env_catalog_load(c, e);
}

void env_unlock(struct envctx *c)
{
	if (c->lock_fd >= 0)
		flock(c->lock_fd, LOCK_UN);
}

int env_catalog_load(struct envctx *c, struct sbx_error *e)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/catalog.json", c->root);
	json_decref(c->catalog);
	c->catalog = NULL;
	if (access(path, F_OK) != 0) {
		c->catalog = json_pack("{s:[],s:[],s:i}", "environments", "revisions", "version", 1);
		return 0;
	}
	json_t *doc = sbx_json_load(path, 64u << 20, e);
	if (!doc)
		return -1;
	if (json_integer_value(json_object_get(doc, "version")) != 1 || !json_is_array(json_object_get(doc, "environments")) ||
	    !json_is_array(json_object_get(doc, "revisions"))) {
		json_decref(doc);
		sbx_error_set(e, SBX_EXIT_INTEGRITY, "catalog", "Scientific environment catalog has an unsupported format");
		return -1;
	}
	c->catalog = doc;
	/* An update that never finished leaves the environment failed, never silently ready. */
	size_t i;
	json_t *env;
	json_array_foreach(json_object_get(doc, "environments"), i, env)
		if (!strcmp(sbx_json_string_or(env, "status", "ready"), "updating")) {
			json_object_set_new(env, "status", json_string("failed"));
			json_object_set_new(env, "error", json_string("Environment update was interrupted; repair through "
								      "environment management before execution."));
		}
	return 0;
}

int env_catalog_save(struct envctx *c, struct sbx_error *e)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/catalog.json", c->root);
	char *text = json_dumps(c->catalog, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!text) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "catalog", "cannot serialise the catalog");
		return -1;
	}
	size_t n = strlen(text);
	char *with_nl = realloc(text, n + 2);
	if (!with_nl) {
		free(text);
		return -1;
	}
	with_nl[n] = '\n';
	with_nl[n + 1] = '\0';
	int rc = sbx_atomic_write(path, with_nl, n + 1, 0600, e);
	free(with_nl);
	return rc;
}

json_t *env_find(struct envctx *c, const char *kind, const char *id)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(c->catalog, kind), i, v)
		if (!strcmp(sbx_json_string_or(v, "id", ""), id))
			return v;
	return NULL;
}

static bool hex_dashes(const char *s)
{
	return *s && strspn(s, "0123456789abcdef-") == strlen(s);
}

bool env_safe_env_id(const char *id)
{
	return !strcmp(id, "starter-python") || !strcmp(id, "starter-r") || (!strncmp(id, "task-", 5) && hex_dashes(id + 5));
}

bool env_safe_rev_id(const char *id)
{
	return !strncmp(id, "rev-", 4) && hex_dashes(id + 4);
}

void env_prefix_path(const struct envctx *c, const char *env_id, const char *rev_id, char *out, size_t size)
{
	snprintf(out, size, "%s/revisions/%.64s/%.64s", c->root, env_id, rev_id);
}
