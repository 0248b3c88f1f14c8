/* update.c — installs and removals in place: package sources, R's
 * managers, workspace wheels merged across revisions, and the update
 * protocol (marked updating before any side effect, then ready or failed). */
#include "env.h"
#include "../lib/atomic_file.h"
#include "../lib/env_lease.h"
#include "../lib/exitcodes.h"
#include "../lib/hash.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/utsname.h>
#include <unistd.h>

#define CRAN_URL "https://cloud.r-project.org"

/* cran and bioconductor: one R expression, package names JSON-quoted. */
static int install_r(struct envctx *c, const char *manager, const char *prefix, json_t *specs, const char **args,
		     struct sbx_error *e)
{
	static char r[PATH_MAX + 16];
	char names[8192] = "";
	static char expr[9000];
	size_t i;
	json_t *v;
	snprintf(r, sizeof(r), "%s/bin/R", prefix);
	if (access(r, X_OK) != 0)
		return env_fail(e, SBX_EXIT_USAGE, "%s", "Environment lacks R; install it with manager=conda first");
	json_array_foreach(specs, i, v) {
		char *quoted = json_dumps(v, JSON_ENCODE_ANY);
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? "," : "", quoted ? quoted : "\"\"");
		free(quoted);
	}
	if (!strcmp(manager, "cran"))
		snprintf(expr, sizeof(expr), "install.packages(c(%s), repos=\"%s\", Ncpus=1)", names, CRAN_URL);
	else
		snprintf(expr, sizeof(expr),
			 "if (!requireNamespace(\"BiocManager\", quietly=TRUE)) install.packages(\"BiocManager\", repos=\"%s\", "
			 "Ncpus=1); BiocManager::install(c(%s), ask=FALSE, update=FALSE)",
			 CRAN_URL, names);
	int n = 0;
	args[n++] = r;
	args[n++] = "--vanilla";
	args[n++] = "--slave";
	args[n++] = "-e";
	args[n++] = expr;
	args[n] = NULL;
	return env_run_tool(c, args, NULL, e);
}

/* Package sources (environments.md 1.8); huawei has no conda mirror. */
static const struct source {
	const char *id, *pip, *conda;
} sources[] = {
	{ "upstream", "https://pypi.org/simple", "conda-forge" },
	{ "tsinghua", "https://pypi.tuna.tsinghua.edu.cn/simple", "https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud/conda-forge" },
	{ "ustc", "https://mirrors.ustc.edu.cn/pypi/simple", "https://mirrors.ustc.edu.cn/anaconda/cloud/conda-forge" },
	{ "huawei", "https://mirrors.huaweicloud.com/repository/pypi/simple", NULL },
};

/* The source: the request's, else the global preset of this manager
 * (SCIENCE_AGENT_PIP_SOURCE / SCIENCE_AGENT_CONDA_SOURCE), else upstream. */
static const struct source *pick_source(const char *requested, const char *manager, struct sbx_error *e)
{
	const char *id = requested && *requested ? requested
			 : getenv(!strcmp(manager, "pip") ? "SCIENCE_AGENT_PIP_SOURCE" : "SCIENCE_AGENT_CONDA_SOURCE");
	if (!id || !*id)
		return &sources[0];
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (!strcmp(sources[i].id, id)) {
			if (!strcmp(manager, "conda") && !sources[i].conda)
				break;
			return &sources[i];
		}
	env_fail(e, SBX_EXIT_USAGE, "Unknown package source for this manager: %s", id);
	return NULL;
}

/* ^[a-z][a-z0-9+.-]*:// ignoring case. */
static bool remote_url(const char *s)
{
	const char *p = s;
	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
		return false;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '+' || *p == '.' ||
	       *p == '-')
		p++;
	return !strncmp(p, "://", 3);
}

static int by_source(const void *a, const void *b)
{
	return strcmp(sbx_json_string_or(*(json_t *const *)a, "sourcePath", ""),
		      sbx_json_string_or(*(json_t *const *)b, "sourcePath", ""));
}

/* The previous revision's wheels and the new ones, keyed hash:sourcePath,
 * sorted by sourcePath. */
static json_t *merge_wheels(json_t *old, json_t *added)
{
	json_t *by_key = json_object(), *v;
	size_t i;
	json_t *lists[2] = { old, added };
	for (int l = 0; l < 2; l++)
		json_array_foreach(lists[l], i, v) {
			char key[1200];
			snprintf(key, sizeof(key), "%s:%s", sbx_json_string_or(json_object_get(v, "content"), "hash", ""),
				 sbx_json_string_or(v, "sourcePath", ""));
			json_object_set(by_key, key, v);
		}
	size_t n = json_object_size(by_key), k = 0;
	json_t **items = calloc(n ? n : 1, sizeof(*items)), *out = json_array();
	const char *key;
	json_object_foreach(by_key, key, v)
		items[k++] = v;
	qsort(items, n, sizeof(*items), by_source);
	for (k = 0; k < n; k++)
		json_array_append(out, items[k]);
	free(items);
	json_decref(by_key);
	return out;
}

/* A mutable environment, marked updating (saved before any side effect). */
static json_t *begin_update(struct envctx *c, const char *id, struct sbx_error *e)
{
	if (!env_safe_env_id(id)) {
		env_fail(e, SBX_EXIT_USAGE, "%s", "Environment metadata contains an unsafe identifier");
		return NULL;
	}
	if (env_lock(c, true, e) != 0)
		return NULL;
	json_t *env = env_find(c, "environments", id);
	if (!env)
		env_fail(e, SBX_EXIT_USAGE, "Unknown environment: %s", id);
	else if (!strcmp(sbx_json_string_or(env, "kind", ""), "starter"))
		env_fail(e, SBX_EXIT_USAGE, "%s", "Starter environments are read-only; create a task environment first");
	if (!env || !strcmp(sbx_json_string_or(env, "kind", ""), "starter")) {
		env_unlock(c);
		return NULL;
	}
	if (!json_object_get(env, "runtimeRevisionId"))
		json_object_set(env, "runtimeRevisionId", json_object_get(env, "currentRevisionId"));
	json_object_set_new(env, "status", json_string("updating"));
	int rc = env_catalog_save(c, e);
	json_t *copy = rc == 0 ? json_deep_copy(env) : NULL;
	env_unlock(c);
	return copy;
}

/* Records the outcome: a new current revision, or failed with the error. */
static json_t *end_update(struct envctx *c, json_t *snapshot_env, json_t *rev, struct sbx_error *e)
{
	const char *id = json_string_value(json_object_get(snapshot_env, "id"));
	char now[32];
	struct sbx_error le;
	if (env_lock(c, true, &le) != 0) {
		json_decref(rev);
		*e = le;
		return NULL;
	}
	json_t *env = env_find(c, "environments", id);
	env_now(now);
	json_object_set_new(env, "updatedAt", json_string(now));
	if (rev) {
		json_object_set_new(env, "status", json_string("ready"));
		json_object_del(env, "error");
		json_object_set(env, "currentRevisionId", json_object_get(rev, "id"));
		json_array_append(json_object_get(c->catalog, "revisions"), rev);
	} else {
		json_object_set_new(env, "status", json_string("failed"));
		json_object_set_new(env, "error", json_string("In-place update failed; installed files may differ from the last "
							     "successful revision. Retry through environment management."));
	}
	env_catalog_save(c, &le);
	env_unlock(c);
	return rev;
}

/* Ends an update begun under the environment's lock: the revision (or the
 * failure, whose error stays the one that caused it) goes into the catalog. */
static json_t *conclude(struct envctx *c, json_t *env, json_t *rev, int lock, struct sbx_error *e)
{
	struct sbx_error saved = *e;
	rev = end_update(c, env, rev, e);
	if (!rev)
		*e = saved;
	json_decref(env);
	close(lock);
	return rev;
}

json_t *env_install(struct envctx *c, const char *id, const char *manager, json_t *packages, json_t *channels,
		    const char *index_url, const char *source_id, const char *workspace, struct sbx_error *e)
{
	(void)workspace;
	char url[2100] = "";
	manager = manager && *manager ? manager : "conda";
	if (strcmp(manager, "conda") && strcmp(manager, "pip") && strcmp(manager, "cran") && strcmp(manager, "bioconductor")) {
		env_fail(e, SBX_EXIT_USAGE, "Unsupported environment package manager: %s", manager);
		return NULL;
	}
	if (json_array_size(channels) && strcmp(manager, "conda")) {
		env_fail(e, SBX_EXIT_USAGE, "%s", "channels can only be used with manager=conda");
		return NULL;
	}
	if (index_url && strcmp(manager, "pip")) {
		env_fail(e, SBX_EXIT_USAGE, "%s", "indexUrl can only be used with manager=pip");
		return NULL;
	}
	if (index_url && env_valid_index_url(index_url, url, sizeof(url), e) != 0)
		return NULL;
	if (c->cache[0] && (!strcmp(manager, "cran") || !strcmp(manager, "bioconductor"))) {
		env_fail(e, SBX_EXIT_USAGE, "%s installs are unavailable in offline-cache mode; use conda packages from the seeded cache",
		     manager);
		return NULL;
	}
	/* The specs: trimmed, checked, unique, sorted; at least one. pip may
	 * also name workspace wheels, copied into the store first. */
	json_t *specs = json_array(), *wheels = json_array(), *wheel_paths = json_array();
	size_t i;
	json_t *v;
	json_array_foreach(packages, i, v) {
		char spec[200], stored[PATH_MAX + 200];
		const char *raw = json_string_value(v);
		size_t len = raw ? strlen(raw) : 0;
		int bad = !raw || !*raw;
		if (bad)
			env_fail(e, SBX_EXIT_USAGE, "%s", "At least one package is required");
		else if (!strcmp(manager, "pip") && remote_url(raw))
			bad = env_fail(e, SBX_EXIT_USAGE, "%s",
				   "Remote pip URLs are not allowed; use a PyPI package specification or workspace-relative .whl path");
		else if (!strcmp(manager, "pip") && len > 4 && !strcasecmp(raw + len - 4, ".whl")) {
			json_t *record;
			bad = env_store_wheel(c, workspace, raw, &record, stored, sizeof(stored), e);
			if (!bad) {
				json_array_append_new(wheels, record);
				json_array_append_new(wheel_paths, json_string(stored));
			}
		} else if (env_valid_package(raw, spec, sizeof(spec), e) != 0)
			bad = 1;
		else
			json_array_append_new(specs, json_string(spec));
		if (bad) {
			json_decref(specs);
			json_decref(wheels);
			json_decref(wheel_paths);
			return NULL;
		}
	}
	specs = env_sorted_unique(specs);
	json_t *chosen = NULL, *preset = NULL;
	const struct source *src = NULL;
	bool conda = !strcmp(manager, "conda");
	/* Explicit channels or index first, then the source, then upstream. */
	bool refused = false;
	if (conda && !json_array_size(channels)) {
		refused = !(src = pick_source(source_id, manager, e));
		if (src && src != &sources[0])
			channels = preset = json_pack("[s]", src->conda);
	}
	if (!strcmp(manager, "pip") && !url[0]) {
		refused = !(src = pick_source(source_id, manager, e));
		if (src)
			snprintf(url, sizeof(url), "%s", src->pip);
	}
	if (refused || (!json_array_size(specs) && !json_array_size(wheels) &&
			env_fail(e, SBX_EXIT_USAGE, "%s", "At least one package is required")) ||
	    (conda && env_valid_channels(c, channels, &chosen, e) != 0)) {
		json_decref(preset);
		json_decref(specs);
		json_decref(wheels);
		json_decref(wheel_paths);
		return NULL;
	}
	json_decref(preset);
	if (!strcmp(manager, "pip"))
		chosen = json_pack("[s]", c->cache[0] ? "offline-cache:pip" : url);
	if (!strcmp(manager, "cran") || !strcmp(manager, "bioconductor"))
		chosen = json_pack("[s]", !strcmp(manager, "cran") ? CRAN_URL : "https://bioconductor.org");
	int lock = env_lock_one(c, id, e);
	json_t *env = lock >= 0 ? begin_update(c, id, e) : NULL;
	if (!env) {
		if (lock >= 0)
			close(lock);
		json_decref(specs);
		json_decref(wheels);
		json_decref(wheel_paths);
		json_decref(chosen);
		return NULL;
	}
	char prefix[PATH_MAX], py[PATH_MAX + 16];
	env_prefix_path(c, id, json_string_value(json_object_get(env, "runtimeRevisionId")), prefix, sizeof(prefix));
	snprintf(py, sizeof(py), "%s/bin/python", prefix);
	const char *args[96];
	int n = 0, rc;
	json_t *changes = json_array();
	if (!strcmp(manager, "conda")) {
		args[n++] = "install";
		args[n++] = "--yes";
		if (c->cache[0])
			args[n++] = "--offline";
		args[n++] = "--strict-channel-priority";
		args[n++] = "--override-channels";
		args[n++] = "--prefix";
		args[n++] = prefix;
		json_array_foreach(chosen, i, v) {
			if (n > 60)
				break;
			args[n++] = "--channel";
			args[n++] = json_string_value(v);
		}
		args[n++] = "--";
		json_array_foreach(specs, i, v) if (n < 94) args[n++] = json_string_value(v);
		args[n] = NULL;
		rc = env_micromamba(c, args, NULL, e);
	} else if (strcmp(manager, "pip") != 0) {
		rc = install_r(c, manager, prefix, specs, args, e);
	} else if (access(py, X_OK) != 0) {
		rc = env_fail(e, SBX_EXIT_USAGE, "%s", "Environment lacks python; install it with manager=conda first");
	} else {
		args[n++] = py;
		args[n++] = "-I";
		args[n++] = "-m";
		args[n++] = "pip";
		args[n++] = "install";
		args[n++] = "--disable-pip-version-check";
		args[n++] = "--no-input";
		if (c->cache[0]) {
			args[n++] = "--no-index";
			args[n++] = "--find-links";
			args[n++] = c->cache;
		} else {
			args[n++] = "--index-url";
			args[n++] = url;
		}
		args[n++] = "--";
		json_array_foreach(specs, i, v) if (n < 94) args[n++] = json_string_value(v);
		json_array_foreach(wheel_paths, i, v) if (n < 94) args[n++] = json_string_value(v);
		args[n] = NULL;
		rc = env_run_tool(c, args, NULL, e);
	}
	json_array_foreach(specs, i, v) {
		char line[256];
		snprintf(line, sizeof(line), "%s:%s", manager, json_string_value(v));
		json_array_append_new(changes, json_string(line));
	}
	json_array_foreach(wheels, i, v) {
		char line[1200];
		snprintf(line, sizeof(line), "pip:wheel:%s", sbx_json_string_or(v, "sourcePath", ""));
		json_array_append_new(changes, json_string(line));
	}
	json_t *prev = env_find(c, "revisions", sbx_json_string_or(env, "currentRevisionId", ""));
	json_t *all_wheels = merge_wheels(json_object_get(prev, "localWheels"), wheels);
	json_t *rev = rc == 0 ? env_record_revision(c, env, prefix, chosen, changes, all_wheels, e) : NULL;
	if (rev)
		env_keep_command(rev, !strcmp(manager, "conda") ? c->provisioner : NULL, args);
	json_decref(all_wheels);
	json_decref(wheels);
	json_decref(wheel_paths);
	json_decref(changes);
	json_decref(specs);
	json_decref(chosen);
	return conclude(c, env, rev, lock, e);
}

json_t *env_uninstall(struct envctx *c, const char *id, json_t *packages, struct sbx_error *e)
{
	json_t *names = json_array();
	size_t i;
	json_t *v;
	json_array_foreach(packages, i, v) {
		char spec[200];
		if (!json_string_value(v) || env_valid_package(json_string_value(v), spec, sizeof(spec), e) != 0) {
			json_decref(names);
			if (!json_string_value(v))
				env_fail(e, SBX_EXIT_USAGE, "%s", "At least one package is required");
			return NULL;
		}
		json_array_append_new(names, json_string(spec));
	}
	names = env_sorted_unique(names);
	if (!json_array_size(names)) {
		json_decref(names);
		env_fail(e, SBX_EXIT_USAGE, "%s", "At least one package is required");
		return NULL;
	}
	int lock = env_lock_one(c, id, e);
	json_t *env = lock >= 0 ? begin_update(c, id, e) : NULL;
	if (!env) {
		if (lock >= 0)
			close(lock);
		json_decref(names);
		return NULL;
	}
	char prefix[PATH_MAX];
	env_prefix_path(c, id, json_string_value(json_object_get(env, "runtimeRevisionId")), prefix, sizeof(prefix));
	const char *args[80] = { "remove", "--yes" };
	int n = 2;
	if (c->cache[0])
		args[n++] = "--offline";
	args[n++] = "--prefix";
	args[n++] = prefix;
	args[n++] = "--";
	json_t *changes = json_array();
	json_array_foreach(names, i, v) {
		char line[256];
		if (n < 78)
			args[n++] = json_string_value(v);
		snprintf(line, sizeof(line), "conda:remove:%s", json_string_value(v));
		json_array_append_new(changes, json_string(line));
	}
	args[n] = NULL;
	json_t *prev = env_find(c, "revisions", sbx_json_string_or(env, "currentRevisionId", ""));
	json_t *channels = json_deep_copy(json_object_get(prev, "channels"));
	if (!channels)
		channels = json_array();
	json_t *rev = env_micromamba(c, args, NULL, e) == 0
			      ? env_record_revision(c, env, prefix, channels, changes, json_object_get(prev, "localWheels"), e)
			      : NULL;
	if (rev)
		env_keep_command(rev, c->provisioner, args);
	json_decref(channels);
	json_decref(changes);
	json_decref(names);
	return conclude(c, env, rev, lock, e);
}
