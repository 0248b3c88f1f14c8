/* revision.c — what a revision records: the prefix's inventory (conda's
 * list, Python's distributions, R's libraries), the immutable v2 snapshot,
 * and the exact command it came from. */
#include "env.h"
#include "conda_list.h"
#include "../lib/uuid.h"
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
json_t *env_sorted_unique(json_t *list)
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
	json_t *doc = sbx_conda_list(out);
	free(out);
	if (!doc)
		return env_fail(e, SBX_EXIT_INTERNAL, "%s", "micromamba list --json gave neither an array nor {packages}");
	*conda = doc;
	*python = json_array();
	snprintf(py, sizeof(py), "%s/bin/python", prefix);
	if (access(py, X_OK) == 0) {
		const char *argv[] = { py, "-I", "-c", (PY_INVENTORY), NULL };
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

/* Inventory, the immutable v2 snapshot, and the revision record (the
 * caller adds it to the catalog). */
json_t *env_record_revision(struct envctx *c, json_t *env, const char *prefix, json_t *channels, json_t *changes,
			       json_t *wheels, struct sbx_error *e)
{
	json_t *conda = NULL, *python = NULL;
	if (inventory(c, prefix, &conda, &python, e) != 0)
		return NULL;
	json_t *rlibs = r_inventory(c, prefix, e);
	const char *language = json_string_value(json_object_get(env, "language"));
	char rev[64], now[32], plat[64], version[64] = "unknown";
	sbx_uuid4("rev-", rev, sizeof(rev));
	env_now(now);
	platform(plat, sizeof(plat));
	json_t *packages = sbx_conda_package_lines(conda, !strcmp(language, "r") ? "r-base" : "python", version,
						   sizeof(version));
	size_t i;
	json_t *p;
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
	packages = env_sorted_unique(packages);
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
		env_fail(e, SBX_EXIT_INTERNAL, "cannot write the snapshot %s", path);
		return NULL;
	}
	json_t *revision = json_pack("{s:O,s:s,s:O,s:s,s:s,s:s,s:o,s:s,s:s,s:s,s:s,s:{s:s,s:I},s:O}", "channels", channels,
				     "createdAt", now, "environmentId", json_object_get(env, "id"), "id", rev, "language",
				     language, "languageVersion", version, "packages", packages, "packageSpecHash", hash,
				     "platform", plat, "provisioner", provisioner_name(c), "runnerVersion", SBX_VERSION,
				     "snapshot", "hash", hash, "size", (json_int_t)n + 1, "requestedChanges", changes);
	if (revision && json_array_size(wheels))
		json_object_set(revision, "localWheels", wheels);
	return revision;
}

/* The exact command a revision came from, kept in its record. */
void env_keep_command(json_t *rev, const char *tool, const char *const *args)
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
