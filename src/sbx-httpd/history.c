/* history.c — /workspace-versions (sbx's extension): a workspace named as
 * the remote API names it (workspace: a key) or as executions do
 * (workspaceRoot: a directory below projects/ or remote-workspaces/). A
 * key's request goes to sbx-ws; a root is opened here (workspace.c) and
 * sbx-snap works on that fd, and for a fork on sibling directories made
 * here (removed again when it fails). */
#include "history.h"
#include "body.h"
#include "metrics.h"
#include "server.h"
#include "workspace.h"
#include "ws_call.h"
#include "../lib/datadir.h"
#include "../lib/json.h"
#include "../lib/remote_path.h"
#include "../lib/snap_call.h"
#include "../lib/tree_remove.h"
#include "../lib/uuid.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FORKS_MAX 64
#define VERSION_MAX 100

/* One request's parameters, from the query (GET) or the body (POST). */
struct ask {
	const char *key, *root, *from, *to, *version;
	bool text;
	char files[16], bytes[16], count[8];
	const char *names[FORKS_MAX];
	size_t n_names;
};

static unsigned status_of(const struct sbx_error *e)
{
	return !strcmp(e->code, "exists") || !strcmp(e->code, "busy") ? 409 : 400;
}

static const char *field(const json_t *doc, struct req *r, const char *name)
{
	return doc ? json_string_value(json_object_get(doc, name)) : query(r, name);
}

/* A version operand: a short string that cannot pass for an option. */
static bool version_ok(const char *v)
{
	return v && *v && *v != '-' && strlen(v) <= VERSION_MAX;
}

static bool bounded(const char *raw, long max, char *out, size_t size)
{
	char *end;
	long v = raw ? strtol(raw, &end, 10) : 0;
	if (!raw || !*raw || *end || v < 0 || v > max)
		return false;
	snprintf(out, size, "%ld", v);
	return true;
}

/* The request's fields; false with the 400 sent. */
static bool parse(struct req *r, const char *what, const json_t *doc, struct ask *a, enum MHD_Result *sent)
{
	const char *bad = NULL;
	a->key = field(doc, r, "workspace");
	a->root = field(doc, r, "workspaceRoot");
	if (!a->key == !a->root)
		bad = "Name the workspace by workspace (a remote key) or workspaceRoot, one of them";
	if (!strcmp(what, "diff")) {
		a->from = query(r, "from");
		a->to = query(r, "to") ? query(r, "to") : "latest";
		const char *t = query(r, "text");
		a->text = t && (!strcmp(t, "1") || !strcmp(t, "true"));
		if (!bounded(query(r, "maxTextFiles") ? query(r, "maxTextFiles") : "20", 1000, a->files, sizeof(a->files)) ||
		    !bounded(query(r, "maxTextBytes") ? query(r, "maxTextBytes") : "262144", 16 << 20, a->bytes, sizeof(a->bytes)))
			bad = "maxTextFiles must be 0 to 1000 and maxTextBytes 0 to 16777216";
		if (!version_ok(a->from) || !version_ok(a->to))
			bad = bad ? bad : "from (and to, default latest) must name versions";
	} else if (!strcmp(what, "restore")) {
		a->version = field(doc, r, "version");
		if (!version_ok(a->version))
			bad = bad ? bad : "version must name a version: latest, latest~N or a digest of the workspace's history";
	} else if (!strcmp(what, "fork")) {
		json_t *v = json_object_get(doc, "version"), *count = json_object_get(doc, "count"), *names = json_object_get(doc, "names");
		a->version = v ? json_string_value(v) : "live";
		if (!version_ok(a->version))
			bad = bad ? bad : "version must name a version (default live)";
		if (names && (!json_is_array(names) || !json_array_size(names) || json_array_size(names) > FORKS_MAX))
			bad = bad ? bad : "names must be an array of 1 to 64 new workspace names";
		size_t i;
		json_t *n;
		json_array_foreach(names, i, n) {
			if (a->n_names == FORKS_MAX)
				break; /* more than fit: refused above, never stored */
			if (!json_is_string(n))
				bad = bad ? bad : "names must be strings";
			a->names[a->n_names++] = json_string_value(n);
		}
		json_int_t c = json_is_integer(count) ? json_integer_value(count) : count ? -1 : names ? (json_int_t)a->n_names : 1;
		if (c < 1 || c > FORKS_MAX || (names && (size_t)c != a->n_names))
			bad = bad ? bad : "count must be an integer from 1 to 64 (the number of names when both are given)";
		snprintf(a->count, sizeof(a->count), "%d", (int)(c > 0 && c <= FORKS_MAX ? c : 1));
	}
	if (bad)
		*sent = reply_error(r, 400, "%s", bad);
	return bad == NULL;
}

/* By key: sbx-ws versions|diff|restore|fork. */
static enum MHD_Result by_key(struct req *r, const char *what, const struct ask *a)
{
	const char *ops[FORKS_MAX + 2];
	size_t n = 0;
	struct ws_call c = { .opts = { what }, .key = a->key, .paths = ops, .fd = -1 };
	char key[SBX_REMOTE_KEY_MAX + 1];
	if (!sbx_remote_key(a->key, key, sizeof(key)))
		return reply_error(r, 400, "Invalid remote workspace key");
	c.key = key;
	if (!strcmp(what, "diff")) {
		ops[n++] = a->from;
		ops[n++] = a->to;
		if (a->text) {
			const char *o[] = { what, "--text", "--max-text-files", a->files, "--max-text-bytes", a->bytes };
			memcpy(c.opts, o, sizeof(o));
		}
	} else if (!strcmp(what, "restore")) {
		ops[n++] = a->version;
	} else if (!strcmp(what, "fork")) {
		ops[n++] = a->version;
		for (size_t i = 0; i < a->n_names; i++)
			ops[n++] = a->names[i];
		if (!a->n_names) {
			c.opts[1] = "--count";
			c.opts[2] = a->count;
		}
	}
	c.n_paths = n;
	struct sbx_error e;
	json_t *out = ws_call_run(&c, &e);
	return out ? reply_json(r, !strcmp(what, "fork") ? 201 : 200, out) : reply_error(r, status_of(&e), "%s", e.message);
}

/* sbx-snap on the fds (the workspace first, then a fork's targets). */
static json_t *snap_run(const char *const *args, const int *fds, size_t n_fds, struct sbx_error *e)
{
	const struct config *cfg = &g_server.cfg;
	char store[PATH_MAX + 32], runs[PATH_MAX + 32];
	sbx_data_path(cfg->data_dir, SBX_DATA_VERSIONING, NULL, store, sizeof(store));
	sbx_data_path(cfg->data_dir, SBX_DATA_RUNNER_EXECUTIONS, "runs", runs, sizeof(runs));
	json_t *out = sbx_snap_call(g_server.prog.snap, store, runs, args, fds, n_fds, e);
	metrics_stage_call(g_server.prog.snap, out != NULL, e);
	return out;
}

/* A fork's directory name beside the source: one plain segment. */
static bool name_ok(const char *name)
{
	char clean[SBX_REMOTE_KEY_MAX + 1];
	return name && strlen(name) <= 200 && name[0] != '.' && !strchr(name, '/') && sbx_remote_key(name, clean, sizeof(clean)) &&
	       !strcmp(clean, name);
}

/* The forks of a root: siblings made here, filled by sbx-snap. */
static enum MHD_Result fork_root(struct req *r, const struct ask *a, int ws, const char *shown)
{
	char names[FORKS_MAX][256], parent_shown[PATH_MAX];
	int fds[FORKS_MAX + 1] = { ws }, made = 0, total = a->n_names ? (int)a->n_names : atoi(a->count);
	const char *slash = strrchr(shown, '/'), *leaf = slash ? slash + 1 : shown;
	snprintf(parent_shown, sizeof(parent_shown), "%.*s", slash ? (int)(slash - shown) : 0, shown);
	int parent = openat(ws, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct sbx_error e = { .code = "bad-request" };
	snprintf(e.message, sizeof(e.message), "Cannot open the workspace's parent directory");
	for (; parent >= 0 && made < total; made++) {
		char uuid[40];
		sbx_uuid4("", uuid, sizeof(uuid));
		snprintf(names[made], sizeof(names[made]), "%s", a->n_names ? a->names[made] : "");
		if (!a->n_names)
			snprintf(names[made], sizeof(names[made]), "%.200s-fork-%.8s", leaf, uuid);
		if (!name_ok(names[made])) {
			snprintf(e.message, sizeof(e.message), "A fork's name must be one directory name of [A-Za-z0-9._-], not starting with '.'");
			break;
		}
		bool dir_made = mkdirat(parent, names[made], 0755) == 0;
		if (!dir_made ||
		    (fds[made + 1] = openat(parent, names[made], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			snprintf(e.code, sizeof(e.code), "%s", errno == EEXIST ? "exists" : "bad-request");
			snprintf(e.message, sizeof(e.message), "%s: %.200s", errno == EEXIST ? "Workspace already exists" : strerror(errno),
				 names[made]);
			made += dir_made; /* made, not opened: removed below */
			break;
		}
	}
	json_t *out = NULL;
	if (made == total) {
		char max[24];
		snprintf(max, sizeof(max), "%lld", g_server.cfg.max_workspace_bytes);
		const char *args[] = { "fork", a->version, "--max-bytes", max, NULL };
		out = snap_run(args, fds, (size_t)total + 1, &e);
	}
	for (int i = 0; i < made; i++) {
		if (fds[i + 1] > 0)
			close(fds[i + 1]);
		if (!out)
			sbx_remove_tree_at(parent, names[i]);
		else {
			char path[PATH_MAX + 256];
			snprintf(path, sizeof(path), "%s/%s", parent_shown, names[i]);
			json_object_set_new(json_array_get(json_object_get(out, "forks"), (size_t)i), "workspaceRoot", json_string(path));
		}
	}
	if (parent >= 0)
		close(parent);
	if (!out)
		return reply_error(r, status_of(&e), "%s", e.message);
	json_object_set_new(out, "workspaceRoot", json_string(shown));
	return reply_json(r, 201, out);
}

/* By workspaceRoot: sbx-snap on the fd opened here. */
static enum MHD_Result by_root(struct req *r, const char *what, const struct ask *a)
{
	char shown[PATH_MAX];
	struct sbx_error e;
	int ws = workspace_open_root(a->root, shown, sizeof(shown), &e);
	if (ws < 0)
		return reply_error(r, 400, "%s", e.message);
	enum MHD_Result sent;
	if (!strcmp(what, "fork")) {
		sent = fork_root(r, a, ws, shown);
		close(ws);
		return sent;
	}
	const char *args[10] = { what };
	size_t n = 1;
	if (!strcmp(what, "diff")) {
		args[n++] = a->from;
		args[n++] = a->to;
		if (a->text) {
			const char *o[] = { "--text", "--max-text-files", a->files, "--max-text-bytes", a->bytes };
			for (size_t i = 0; i < 5; i++)
				args[n++] = o[i];
		}
	} else if (!strcmp(what, "restore")) {
		args[n++] = a->version;
	}
	json_t *out = snap_run(args, &ws, 1, &e);
	close(ws);
	if (!out)
		return reply_error(r, status_of(&e), "%s", e.message);
	json_object_set_new(out, "workspaceRoot", json_string(shown));
	return reply_json(r, 200, out);
}

enum MHD_Result handle_history(struct req *r, const char *what)
{
	enum MHD_Result sent;
	json_t *doc = NULL;
	struct ask a = { 0 };
	if (strcmp(what, "versions") != 0 && strcmp(what, "diff") != 0 && !(doc = body_object(r, &sent)))
		return sent;
	if (parse(r, what, doc, &a, &sent))
		sent = a.key ? by_key(r, what, &a) : by_root(r, what, &a);
	json_decref(doc);
	return sent;
}
