/* environments.c — the environment endpoints (runner-api 4 rows 8-16,
 * 5.4) as sbx-env children: sbx-httpd maps their JSON and errors onto the
 * API; /health reads the setup state sbx-env keeps, spawning nothing. */
#include "environments.h"
#include "server.h"
#include "reply.h"
#include "body.h"
#include "workspace.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/datadir.h"
#include "../lib/env_lease.h"
#include "../lib/json.h"
#include "../lib/remote_path.h"
#include "../lib/stage_call.h"
#include "metrics.h"
#include "../lib/strvec.h"

#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#define ENV_OUTPUT_CAP (32u << 20)

/* Runs sbx-env (dir_fd >= 0 becomes its fd 3); 0 with its stdout, or -1
 * with its diagnostic in e. */
static int run_env_fd(const char *const *args, int dir_fd, char **out, size_t *len, struct sbx_error *e)
{
	struct sbx_strvec argv;
	sbx_strvec_init(&argv);
	sbx_strvec_push(&argv, g_server.prog.env);
	for (int i = 0; args[i]; i++)
		sbx_strvec_push(&argv, args[i]);
	if (argv.failed) {
		sbx_strvec_free(&argv);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "out of memory");
		return -1;
	}
	struct sbx_spawn s = { .argv = (const char *const *)argv.items, .stdin_fd = -1, .die_with_parent = true,
			       .extra_fds = &dir_fd, .n_extra = dir_fd >= 0 ? 1 : 0 };
	int rc = sbx_stage_call_bytes(&s, 0, ENV_OUTPUT_CAP, out, len, e);
	metrics_stage_call(g_server.prog.env, rc == 0, e);
	sbx_strvec_free(&argv);
	return rc;
}

static int run_env(const char *const *args, char **out, size_t *len, struct sbx_error *e)
{
	return run_env_fd(args, -1, out, len, e);
}

static enum MHD_Result env_json_fd(struct req *r, unsigned status, const char *const *args, int dir_fd)
{
	char *out = NULL;
	size_t len;
	struct sbx_error e;
	if (run_env_fd(args, dir_fd, &out, &len, &e) != 0)
		return reply_error(r, 400, "%s", e.message);
	json_t *v = json_loadb(out, len, 0, NULL);
	free(out);
	/* A revision's command (host paths, argv) stays in sbx-env's records. */
	return v ? reply_json(r, status, sbx_json_del_each(v, "command")) : reply_error(r, 400, "sbx-env answered no JSON");
}

static enum MHD_Result env_json(struct req *r, unsigned status, const char *const *args)
{
	return env_json_fd(r, status, args, -1);
}

/* Starts setup in the background (sbx-env setup returns once it runs). */
void environments_start_setup(void)
{
	char *out = NULL;
	struct sbx_error e;
	size_t len;
	const char *args[] = { "setup", NULL };
	if (run_env(args, &out, &len, &e) != 0)
		sbx_diag("warning", "env-setup", NULL, "%s", e.message);
	free(out);
}

json_t *environments_capability(void)
{
	char path[PATH_MAX + 64];
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_SCIENTIFIC_ENVS, "setup.json", path, sizeof(path));
	json_t *state = json_load_file(path, 0, NULL);
	bool ready = !strcmp(sbx_json_string_or(state, "state", ""), "ready") && g_server.cfg.scientific_envs;
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_SCIENTIFIC_ENVS, "catalog.json", path, sizeof(path));
	json_t *catalog = ready ? json_load_file(path, 0, NULL) : NULL, *langs = json_array();
	size_t i;
	json_t *env;
	json_array_foreach(json_object_get(catalog, "environments"), i, env) {
		const char *id = sbx_json_string_or(env, "id", "");
		if (!strcmp(id, "starter-python") || !strcmp(id, "starter-r"))
			json_array_append_new(langs, json_string(id + 8));
	}
	const char *configured = getenv("SCIENCE_AGENT_PROVISIONER_PATH");
	const char *name = configured && *configured ? (strrchr(configured, '/') ? strrchr(configured, '/') + 1 : configured)
						     : "micromamba";
	json_t *cap = json_pack("{s:b,s:b,s:o,s:s?,s:b}", "available", ready && json_array_size(langs), "enabled",
				g_server.cfg.scientific_envs, "languages", langs, "provisioner", ready ? name : NULL,
				"startersReady", ready);
	if (!ready)
		json_object_set_new(cap, "unavailableReason",
				    json_string(!g_server.cfg.scientific_envs ? "Scientific environments are disabled by configuration"
						: json_is_string(json_object_get(state, "lastError"))
							? json_string_value(json_object_get(state, "lastError"))
							: "Scientific environments are not configured; install them in System Settings"));
	json_decref(state);
	json_decref(catalog);
	return cap;
}

/* The prefix an execution mounts for a revision (or the language's starter). */
int environments_resolve(const char *selector, const char *id, const char *language, char *prefix, size_t size,
			 char *revision, size_t rsize, char *env_id, size_t esize, struct sbx_error *e)
{
	char *out = NULL;
	size_t len;
	const char *args[] = { "resolve", "--language", language, id ? selector : NULL, id, NULL };
	if (run_env(args, &out, &len, e) != 0)
		return -1;
	json_t *v = json_loadb(out, len, 0, NULL);
	free(out);
	snprintf(prefix, size, "%s", sbx_json_string_or(v, "prefix", ""));
	snprintf(revision, rsize, "%s", sbx_json_string_or(v, "revisionId", ""));
	snprintf(env_id, esize, "%s", sbx_json_string_or(v, "environmentId", ""));
	json_decref(v);
	if (!*prefix)
		sbx_error_set(e, SBX_EXIT_INTERNAL, "bad-answer", "sbx-env resolve answered no prefix");
	return *prefix ? 0 : -1;
}

#define ENV_MAX_PACKAGES 32
#define ENV_MAX_CHANNELS 16

/* The workspace an install reads local wheels from: runnerWorkspaceKey
 * (<data>/remote-workspaces/<key>) wins over workspaceRoot; -1 with e
 * cleared when the request names neither, set when one cannot be opened. */
static int install_workspace(const json_t *doc, struct sbx_error *e)
{
	char shown[PATH_MAX];
	sbx_error_clear(e);
	const json_t *key = json_object_get(doc, "runnerWorkspaceKey");
	if (key && !json_is_null(key))
		return workspace_open_key(json_string_value(key), false, shown, sizeof(shown), e);
	const char *ws = json_string_value(json_object_get(doc, "workspaceRoot"));
	return ws ? workspace_open_root(ws, shown, sizeof(shown), e) : -1;
}

/* A JSON array of at most cap strings (absent: none); else e names the field. */
static bool string_list(const json_t *v, const char *field, size_t min, size_t cap, struct sbx_error *e)
{
	if (!v && min == 0)
		return true;
	if (!json_is_array(v) || json_array_size(v) < min || json_array_size(v) > cap) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "%s must be an array of %zu to %zu strings", field, min, cap);
		return false;
	}
	size_t i;
	json_t *item;
	json_array_foreach(v, i, item) if (!json_is_string(item) || !*json_string_value(item)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "%s[%zu] must be a non-empty string", field, i);
		return false;
	}
	return true;
}

/* install / uninstall: every package after "--", never as an option; lists
 * over their cap are refused, never cut. */
static enum MHD_Result install_or_uninstall(struct req *r, const json_t *doc, const char *id, const char *action)
{
	bool install = !strcmp(action, "install");
	const json_t *channels = json_object_get(doc, "channels"), *packages = json_object_get(doc, "packages");
	struct sbx_error e;
	if (!json_is_array(packages) || !json_array_size(packages) || json_array_size(packages) > ENV_MAX_PACKAGES)
		return reply_error(r, 400, "At least one package is required (at most %d at a time)", ENV_MAX_PACKAGES);
	if (!string_list(packages, "packages", 1, ENV_MAX_PACKAGES, &e))
		return reply_error(r, 400, "%s", e.message);
	if (install && !string_list(channels, "channels", 0, ENV_MAX_CHANNELS, &e))
		return reply_error(r, 400, "%s", e.message);
	int ws_fd = -1;
	if (install && (ws_fd = install_workspace(doc, &e)) < 0 && e.message[0])
		return reply_error(r, 400, "%s", e.message);
	struct sbx_strvec args;
	sbx_strvec_init(&args);
	sbx_strvec_push(&args, action);
	if (install) {
		static const char *const options[][2] = { { "manager", "--manager" }, { "indexUrl", "--index-url" },
							  { "source", "--source" } };
		for (size_t k = 0; k < sizeof(options) / sizeof(options[0]); k++) {
			const char *value = json_string_value(json_object_get(doc, options[k][0]));
			if (value)
				sbx_strvec_pushl(&args, options[k][1], value, NULL);
		}
		/* Opened below the roots here; sbx-env reads the wheel below that fd. */
		if (ws_fd >= 0)
			sbx_strvec_pushl(&args, "--workspace", "fd:3", NULL);
		size_t i;
		json_t *v;
		json_array_foreach(channels, i, v) sbx_strvec_pushl(&args, "--channel", json_string_value(v), NULL);
	}
	sbx_strvec_pushl(&args, "--", id, NULL);
	size_t i;
	json_t *v;
	json_array_foreach(packages, i, v) sbx_strvec_push(&args, json_string_value(v));
	enum MHD_Result out = args.failed ? MHD_NO : env_json_fd(r, 201, (const char *const *)args.items, ws_fd);
	sbx_strvec_free(&args);
	if (ws_fd >= 0)
		close(ws_fd);
	return out;
}

enum MHD_Result handle_environments(struct req *r, const char *id, const char *action)
{
	enum MHD_Result sent;
	/* The setup view answers when disabled too: state and phase "disabled". */
	if (!strcmp(action, "setup-view")) {
		const char *args[] = { "status", NULL };
		return env_json(r, 200, args);
	}
	if (!g_server.cfg.scientific_envs)
		return reply_error(r, 400, "Scientific environments are disabled by configuration");
	if (!strcmp(action, "list")) {
		const char *args[] = { "list", NULL };
		return env_json(r, 200, args);
	}
	if (!strcmp(action, "revisions")) {
		const char *args[] = { "revisions", NULL };
		return env_json(r, 200, args);
	}
	if (!strcmp(action, "snapshot")) {
		char *out = NULL;
		size_t len;
		struct sbx_error e;
		const char *args[] = { "snapshot", "--", id, NULL };
		if (run_env(args, &out, &len, &e) != 0)
			return reply_error(r, 400, "%s", e.message);
		struct MHD_Response *resp = MHD_create_response_from_buffer(len, out, MHD_RESPMEM_MUST_FREE);
		if (!resp) {
			free(out);
			return MHD_NO;
		}
		return reply_response(r, 200, resp, "application/json; charset=utf-8");
	}
	if (!strcmp(action, "delete")) {
		const char *args[] = { "delete", "--", id, NULL };
		return env_json(r, 200, args);
	}
	json_t *doc = body_object(r, &sent);
	if (!doc)
		return sent;
	enum MHD_Result out;
	if (!strcmp(action, "setup")) {
		if (!json_is_true(json_object_get(doc, "confirmed"))) {
			json_decref(doc);
			return reply_error(r, 400, "Scientific environment setup requires explicit confirmation");
		}
		const char *args[] = { "setup", NULL };
		out = env_json(r, 202, args);
	} else if (!strcmp(action, "create")) {
		const char *name = json_string_value(json_object_get(doc, "name"));
		const char *lang = json_string_value(json_object_get(doc, "language"));
		const char *base = json_string_value(json_object_get(doc, "baseEnvironmentId"));
		const char *args[8] = { "create", "--language", lang ? lang : "" };
		int n = 3;
		if (base) {
			args[n++] = "--base";
			args[n++] = base;
		}
		args[n++] = "--";
		args[n++] = name ? name : "";
		args[n] = NULL;
		out = env_json(r, 201, args);
	} else {
		out = install_or_uninstall(r, doc, id, action);
	}
	json_decref(doc);
	return out;
}

/* An execution's read lease on its environment: sbx-env's mutations take
 * the same lock exclusively, so an install never changes a prefix a run
 * is using, and a run never starts on a prefix mid-update. */
int environments_lease(const char *env_id)
{
	char dir[PATH_MAX + 64];
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_SCIENTIFIC_ENVS, "locks", dir, sizeof(dir));
	return sbx_env_lease(dir, env_id, false);
}
