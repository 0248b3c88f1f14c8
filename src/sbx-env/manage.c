/* manage.c — environments and their revisions: starters bootstrapped,
 * named environments cloned from a base, installs and removals in place
 * under the environment's lock (a crash mid-update leaves it failed), and
 * after each success an inventory, an immutable v2 snapshot, a revision. */
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

#define PY_INVENTORY                                                                                           \
	"import importlib.metadata as m, json\n"                                                               \
	"print(json.dumps(sorted([{'name': d.metadata['Name'], 'version': d.version,"                        \
	" 'installer': (d.read_text('INSTALLER') or '').strip()} for d in m.distributions()"                   \
	" if d.metadata['Name']], key=lambda x: x['name'].lower())))"

static int fail(struct sbx_error *e, int code, const char *fmt, const char *a)
{
	sbx_error_set(e, code, "environment", fmt, a);
	return -1;
}

static int unlink_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void remove_tree(const char *path)
{
	nftw(path, unlink_one, 32, FTW_DEPTH | FTW_PHYS);
}

/* The per-environment lock: mutations exclusive, held across the tool run. */
static int lock_env(struct envctx *c, const char *id, struct sbx_error *e)
{
	char dir[PATH_MAX];
	if (!env_safe_env_id(id))
		return fail(e, SBX_EXIT_USAGE, "%s", "Environment metadata contains an unsafe identifier");
	snprintf(dir, sizeof(dir), "%s/locks", c->root);
	int fd = sbx_env_lease(dir, id, true);
	if (fd < 0)
		fail(e, SBX_EXIT_RESOURCE, "cannot lock environment %s", id);
	return fd;
}

/* The provisioner as records name it: its file's basename. */
static const char *provisioner_name(const struct envctx *c)
{
	const char *slash = strrchr(c->provisioner, '/');
	return slash ? slash + 1 : c->provisioner;
}

static void platform(char *out, size_t size)
{
	struct utsname u;
	uname(&u);
	snprintf(out, size, "linux-%.40s", !strcmp(u.machine, "x86_64") ? "x64" : !strcmp(u.machine, "aarch64") ? "arm64" : u.machine);
}

static int by_string(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* Sorted, unique strings. */
static json_t *sorted_unique(json_t *list)
{
	size_t n = json_array_size(list), k = 0;
	json_t **items = calloc(n ? n : 1, sizeof(*items)), *out = json_array();
	for (size_t i = 0; i < n; i++)
		items[i] = json_array_get(list, i);
	qsort(items, n, sizeof(*items), by_string);
	for (size_t i = 0; i < n; i++)
		if (!k++ || strcmp(json_string_value(items[i]), json_string_value(items[i - 1])))
			json_array_append(out, items[i]);
	free(items);
	json_decref(list);
	return out;
}

/* The prefix's inventory: conda's list, and Python's distributions. */
#define R_INVENTORY "ip <- installed.packages(fields=\"Repository\"); write.table(ip[, c(\"Package\", \"Version\", \"Repository\")], sep=\"\\t\", quote=FALSE, row.names=FALSE, col.names=FALSE)"

/* R's libraries: Package, Version, Repository rows. */
static json_t *r_inventory(struct envctx *c, const char *prefix, struct sbx_error *e)
{
	char r[PATH_MAX + 16], *out = NULL;
	json_t *list = json_array();
	snprintf(r, sizeof(r), "%s/bin/R", prefix);
	const char *argv[] = { r, "--vanilla", "--slave", "-e", R_INVENTORY, NULL };
	if (access(r, X_OK) != 0 || env_run_tool(c, argv, &out, e) != 0)
		return list;
	for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f1 = strtok(line, "\t"), *f2 = strtok(NULL, "\t"), *f3 = strtok(NULL, "\t");
		if (f1 && f2)
			json_array_append_new(list, json_pack("{s:s,s:s,s:s}", "name", f1, "version", f2, "repository", f3 ? f3 : "NA"));
	}
	free(out);
	return list;
}

static int inventory(struct envctx *c, const char *prefix, json_t **conda, json_t **python, struct sbx_error *e)
{
	char *out = NULL, py[PATH_MAX + 16];
	const char *list[] = { "list", "--json", "--prefix", prefix, NULL };
	if (env_micromamba(c, list, &out, e) != 0)
		return -1;
	json_t *doc = json_loads(out ? out : "", 0, NULL);
	free(out);
	if (json_is_object(doc) && json_is_array(json_object_get(doc, "packages"))) {
		json_t *p = json_incref(json_object_get(doc, "packages"));
		json_decref(doc);
		doc = p;
	}
	if (!json_is_array(doc)) {
		json_decref(doc);
		return fail(e, SBX_EXIT_INTERNAL, "%s", "micromamba list --json gave neither an array nor {packages}");
	}
	*conda = doc;
	*python = json_array();
	snprintf(py, sizeof(py), "%s/bin/python", prefix);
	if (access(py, X_OK) == 0) {
		const char *argv[] = { py, "-I", "-c", PY_INVENTORY, NULL };
		if (env_run_tool(c, argv, &out, e) != 0)
			return -1;
		json_t *d = json_loads(out ? out : "", 0, NULL);
		free(out);
		if (json_is_array(d)) {
			json_decref(*python);
			*python = d;
		} else {
			json_decref(d);
		}
	}
	return 0;
}

/* Inventory, the immutable v2 snapshot, and the revision record (not yet
 * in the catalog). */
static json_t *record_revision(struct envctx *c, json_t *env, const char *prefix, json_t *channels, json_t *changes,
			       json_t *wheels, struct sbx_error *e)
{
	json_t *conda, *python;
	if (inventory(c, prefix, &conda, &python, e) != 0)
		return NULL;
	json_t *rlibs = r_inventory(c, prefix, e);
	const char *language = json_string_value(json_object_get(env, "language"));
	char rev[64], now[32], plat[64], version[64] = "unknown";
	env_new_id("rev-", rev, sizeof(rev));
	env_now(now);
	platform(plat, sizeof(plat));
	json_t *packages = json_array();
	size_t i;
	json_t *p;
	json_array_foreach(conda, i, p) {
		const char *name = json_string_value(json_object_get(p, "name"));
		const char *ver = json_string_value(json_object_get(p, "version"));
		const char *build = json_string_value(json_object_get(p, "build_string"));
		if (!name || !ver)
			continue;
		char line[512];
		snprintf(line, sizeof(line), "%s=%s%s%s", name, ver, build ? "=" : "", build ? build : "");
		json_array_append_new(packages, json_string(line));
		if (!strcmp(name, !strcmp(language, "r") ? "r-base" : "python"))
			snprintf(version, sizeof(version), "%s", ver);
	}
	json_array_foreach(python, i, p) {
		char line[512];
		snprintf(line, sizeof(line), "python:%s==%s", sbx_json_string_or(p, "name", "?"), sbx_json_string_or(p, "version", "?"));
		json_array_append_new(packages, json_string(line));
	}
	json_array_foreach(rlibs, i, p) {
		char line[512];
		snprintf(line, sizeof(line), "r:%s==%s", sbx_json_string_or(p, "name", "?"), sbx_json_string_or(p, "version", "?"));
		json_array_append_new(packages, json_string(line));
	}
	packages = sorted_unique(packages);
	json_t *snap = json_pack("{s:O,s:s,s:O,s:s,s:{s:o,s:o,s:o},s:s,s:O,s:s,s:s,s:{s:s,s:s},s:O,s:s}", "channels",
				 channels, "createdAt", now, "environmentId", json_object_get(env, "id"), "format",
				 "sciencediscovery-environment-revision-v2", "installed", "conda", conda, "python", python,
				 "r", rlibs, "language", language, "packages", packages, "platform", plat, "provisioner",
				 provisioner_name(c), "reconstruction", "status", "reference-only", "reason",
				 "Package inventory is retained; remote installation artifacts are not guaranteed to remain "
				 "available.",
				 "requestedChanges", changes, "revisionId", rev);
	if (json_array_size(wheels))
		json_object_set(snap, "localWheels", wheels);
	char *text = json_dumps(snap, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(snap);
	char path[PATH_MAX + 96], hash[65];
	snprintf(path, sizeof(path), "%s/snapshots/%s.json", c->root, rev);
	size_t n = text ? strlen(text) : 0;
	int fd = text ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
	bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n && write(fd, "\n", 1) == 1 && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	if (ok) {
		char *with_nl = malloc(n + 1);
		memcpy(with_nl, text, n);
		with_nl[n] = '\n';
		sbx_sha256_hex(with_nl, n + 1, hash);
		free(with_nl);
	}
	free(text);
	if (!ok) {
		json_decref(packages);
		fail(e, SBX_EXIT_INTERNAL, "cannot write the snapshot %s", path);
		return NULL;
	}
	json_t *revision = json_pack("{s:O,s:s,s:O,s:s,s:s,s:s,s:o,s:s,s:s,s:s,s:s,s:{s:s,s:I},s:O}", "channels", channels,
				     "createdAt", now, "environmentId", json_object_get(env, "id"), "id", rev, "language",
				     language, "languageVersion", version, "packages", packages, "packageSpecHash", hash,
				     "platform", plat, "provisioner", provisioner_name(c), "runnerVersion", SBX_VERSION,
				     "snapshot", "hash", hash, "size", (json_int_t)(n + 1), "requestedChanges", changes);
	if (revision && json_array_size(wheels))
		json_object_set(revision, "localWheels", wheels);
	return revision;
}

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
		return fail(e, SBX_EXIT_USAGE, "%s", "Environment lacks R; install it with manager=conda first");
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
	fail(e, SBX_EXIT_USAGE, "Unknown package source for this manager: %s", id);
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

/* The exact command a revision came from, kept in its record. */
static void keep_command(json_t *rev, const char *tool, const char *const *args)
{
	json_t *argv = json_array();
	if (tool) {
		json_array_append_new(argv, json_string(tool));
		json_array_append_new(argv, json_string("--no-rc"));
	}
	for (int i = 0; args[i]; i++)
		json_array_append_new(argv, json_string(args[i]));
	json_object_set_new(rev, "command", argv);
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
		return fail(e, SBX_EXIT_USAGE, "%s", "Scientific environments require at least one allowed package channel");
	char runtime[64];
	env_new_id("rev-", runtime, sizeof(runtime));
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
	if (env_micromamba(c, args, NULL, e) == 0 && (rev = record_revision(c, env, rev_dir, channels, no_changes, NULL, e)))
		keep_command(rev, c->provisioner, args);
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
		fail(e, SBX_EXIT_USAGE, "Unsupported environment language: %s", language);
		return NULL;
	}
	snprintf(base_id, sizeof(base_id), "%s", base && *base ? base : !strcmp(language, "r") ? "starter-r" : "starter-python");
	if (env_lock(c, true, e) != 0)
		return NULL;
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(c->catalog, "environments"), i, v)
		if (!strcasecmp(sbx_json_string_or(v, "name", ""), name)) {
			fail(e, SBX_EXIT_USAGE, "Environment name already exists: %s", name);
			return NULL;
		}
	if (!strcmp(base_id, "starter-r") && !env_find(c, "environments", "starter-r") &&
	    env_bootstrap_starter(c, "r", e) != 0)
		return NULL;
	json_t *b = env_find(c, "environments", base_id);
	if (!b || !env_safe_env_id(base_id)) {
		fail(e, SBX_EXIT_USAGE, "Unknown base environment: %s", base_id);
		return NULL;
	}
	if (strcmp(sbx_json_string_or(b, "language", ""), language) != 0) {
		fail(e, SBX_EXIT_USAGE, "%s", "Base environment language does not match the requested language");
		return NULL;
	}
	if (strcmp(sbx_json_string_or(b, "status", "ready"), "ready") != 0) {
		fail(e, SBX_EXIT_USAGE, "Base environment is not ready: %s", base_id);
		return NULL;
	}
	env_new_id("task-", id, sizeof(id));
	env_new_id("rev-", runtime, sizeof(runtime));
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
		rev = record_revision(c, env, prefix, json_object_get(base_rev, "channels") ? json_object_get(base_rev, "channels")
											: none,
				      none, json_object_get(base_rev, "localWheels"), e);
	json_decref(none);
	if (rev)
		keep_command(rev, c->provisioner, args);
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

/* A mutable environment, marked updating (saved before any side effect). */
static json_t *begin_update(struct envctx *c, const char *id, struct sbx_error *e)
{
	if (!env_safe_env_id(id)) {
		fail(e, SBX_EXIT_USAGE, "%s", "Environment metadata contains an unsafe identifier");
		return NULL;
	}
	if (env_lock(c, true, e) != 0)
		return NULL;
	json_t *env = env_find(c, "environments", id);
	if (!env)
		fail(e, SBX_EXIT_USAGE, "Unknown environment: %s", id);
	else if (!strcmp(sbx_json_string_or(env, "kind", ""), "starter"))
		fail(e, SBX_EXIT_USAGE, "%s", "Starter environments are read-only; create a task environment first");
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
		fail(e, SBX_EXIT_USAGE, "Unsupported environment package manager: %s", manager);
		return NULL;
	}
	if (json_array_size(channels) && strcmp(manager, "conda")) {
		fail(e, SBX_EXIT_USAGE, "%s", "channels can only be used with manager=conda");
		return NULL;
	}
	if (index_url && strcmp(manager, "pip")) {
		fail(e, SBX_EXIT_USAGE, "%s", "indexUrl can only be used with manager=pip");
		return NULL;
	}
	if (index_url && env_valid_index_url(index_url, url, sizeof(url), e) != 0)
		return NULL;
	if (c->cache[0] && (!strcmp(manager, "cran") || !strcmp(manager, "bioconductor"))) {
		fail(e, SBX_EXIT_USAGE, "%s installs are unavailable in offline-cache mode; use conda packages from the seeded cache",
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
			fail(e, SBX_EXIT_USAGE, "%s", "At least one package is required");
		else if (!strcmp(manager, "pip") && remote_url(raw))
			bad = fail(e, SBX_EXIT_USAGE, "%s",
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
	specs = sorted_unique(specs);
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
			fail(e, SBX_EXIT_USAGE, "%s", "At least one package is required")) ||
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
	int lock = lock_env(c, id, e);
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
		rc = fail(e, SBX_EXIT_USAGE, "%s", "Environment lacks python; install it with manager=conda first");
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
	json_t *rev = rc == 0 ? record_revision(c, env, prefix, chosen, changes, all_wheels, e) : NULL;
	if (rev)
		keep_command(rev, !strcmp(manager, "conda") ? c->provisioner : NULL, args);
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
				fail(e, SBX_EXIT_USAGE, "%s", "At least one package is required");
			return NULL;
		}
		json_array_append_new(names, json_string(spec));
	}
	names = sorted_unique(names);
	if (!json_array_size(names)) {
		json_decref(names);
		fail(e, SBX_EXIT_USAGE, "%s", "At least one package is required");
		return NULL;
	}
	int lock = lock_env(c, id, e);
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
			      ? record_revision(c, env, prefix, channels, changes, json_object_get(prev, "localWheels"), e)
			      : NULL;
	if (rev)
		keep_command(rev, c->provisioner, args);
	json_decref(channels);
	json_decref(changes);
	json_decref(names);
	return conclude(c, env, rev, lock, e);
}

int env_delete(struct envctx *c, const char *id, struct sbx_error *e)
{
	if (!env_safe_env_id(id))
		return fail(e, SBX_EXIT_USAGE, "%s", "Environment metadata contains an unsafe identifier");
	if (!strncmp(id, "starter-", 8))
		return fail(e, SBX_EXIT_USAGE, "%s", "Starter environments cannot be deleted");
	int lock = lock_env(c, id, e);
	if (lock < 0 || env_lock(c, true, e) != 0) {
		if (lock >= 0)
			close(lock);
		return -1;
	}
	json_t *envs = json_object_get(c->catalog, "environments");
	size_t i;
	json_t *v;
	int rc = fail(e, SBX_EXIT_USAGE, "Unknown environment: %s", id);
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
			fail(e, SBX_EXIT_USAGE, "%s", "Unknown environment revision; select a current environment");
			return NULL;
		}
		env = env_find(c, "environments", sbx_json_string_or(rev, "environmentId", ""));
		if (!env || strcmp(sbx_json_string_or(env, "currentRevisionId", ""), revision) != 0) {
			fail(e, SBX_EXIT_USAGE, "%s", "Historical environment revisions are audit-only; select an environment ID to use its latest state");
			return NULL;
		}
	} else if (environment && *environment) {
		if (!env_safe_env_id(environment) || !(env = env_find(c, "environments", environment))) {
			fail(e, SBX_EXIT_USAGE, "Unknown environment: %s", environment);
			return NULL;
		}
	} else {
		char id[32];
		snprintf(id, sizeof(id), "starter-%s", language);
		env = env_find(c, "environments", id);
		if (!env) {
			fail(e, SBX_EXIT_USAGE, "%s", "Scientific environments are not configured; install them in System Settings");
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
		return fail(e, SBX_EXIT_USAGE, "%s", "Environment metadata contains an unsafe identifier");
	if (env_lock(c, false, e) != 0)
		return -1;
	env_unlock(c);
	json_t *r = env_find(c, "revisions", rev);
	if (!r)
		return fail(e, SBX_EXIT_USAGE, "Unknown environment revision: %s", rev);
	char path[PATH_MAX + 96], hash[65];
	snprintf(path, sizeof(path), "%s/snapshots/%s.json", c->root, rev);
	FILE *f = fopen(path, "re");
	if (!f)
		return fail(e, SBX_EXIT_INTEGRITY, "Environment revision snapshot is corrupt: %s", rev);
	*bytes = malloc(16u << 20);
	*len = *bytes ? fread(*bytes, 1, 16u << 20, f) : 0;
	fclose(f);
	sbx_sha256_hex(*bytes ? *bytes : "", *len, hash);
	if (!*bytes || strcmp(hash, sbx_json_string_or(json_object_get(r, "snapshot"), "hash", ""))) {
		free(*bytes);
		*bytes = NULL;
		return fail(e, SBX_EXIT_INTEGRITY, "Environment revision snapshot is corrupt: %s", rev);
	}
	return 0;
}
