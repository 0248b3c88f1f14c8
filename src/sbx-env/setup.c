/* setup.c — the setup state machine of environments.md 1.11, kept in
 * <root>/setup.json so every process sees it; one run at a time under
 * locks/setup.lock (a second caller waits for it and shares its outcome);
 * a failure is never permanent: the next setup retries. */
#include "env.h"
#include "../lib/atomic_file.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <unistd.h>

static bool enabled(void)
{
	const char *v = getenv("SCIENTIFIC_ENVS");
	return !v || !*v || !strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes");
}

static void state_path(const struct envctx *c, char *out, size_t size)
{
	snprintf(out, size, "%s/setup.json", c->root);
}

static json_t *component(const char *state, const char *phase, const char *message)
{
	return json_pack("{s:n,s:n,s:n,s:s,s:s,s:n,s:s,s:n}", "action", "completedAt", "error", "message", message, "phase",
			 phase, "startedAt", "state", state, "updatedAt");
}

static json_t *initial(struct envctx *c)
{
	char now[32];
	env_now(now);
	bool on = enabled();
	json_t *v = json_pack("{s:n,s:n,s:s,s:s,s:s,s:n,s:s,s:s,s:{s:o,s:o}}", "completedAt", "error", "message",
			      on ? "Python base environment is waiting to be installed" : "Scientific environments are disabled by configuration",
			      "phase", on ? "pending" : "disabled", "state", on ? "not-configured" : "disabled", "startedAt",
			      "updatedAt", now, "networkPolicy", c->cache[0] ? "offline-cache" : "allowed-channels",
			      "components", "micromamba", component("pending", "pending", "waiting"), "conda",
			      component("pending", "pending", "waiting"));
	/* An existing starter with a runnable provisioner is ready. */
	struct sbx_error e;
	if (on && env_lock(c, false, &e) == 0) {
		env_unlock(c);
		if (env_find(c, "environments", "starter-python") && env_provisioner_valid(c)) {
			json_object_set_new(v, "state", json_string("ready"));
			json_object_set_new(v, "phase", json_string("complete"));
			json_object_set_new(v, "message", json_string("Scientific environments are ready"));
		}
	}
	return v;
}

static json_t *load_state(struct envctx *c)
{
	char path[PATH_MAX + 32];
	struct sbx_error e;
	state_path(c, path, sizeof(path));
	json_t *v = access(path, F_OK) == 0 ? sbx_json_load(path, 1u << 20, &e) : NULL;
	/* "ready" holds only while the provisioner is still the right one. */
	if (!enabled() || (v && !strcmp(sbx_json_string_or(v, "state", ""), "ready") && !env_provisioner_valid(c))) {
		json_decref(v);
		v = NULL;
	}
	return v ? v : initial(c);
}

static void save_state(struct envctx *c, json_t *v)
{
	char path[PATH_MAX + 32], now[32];
	struct sbx_error e;
	env_now(now);
	json_object_set_new(v, "updatedAt", json_string(now));
	state_path(c, path, sizeof(path));
	char *text = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (text)
		sbx_atomic_write(path, text, strlen(text), 0644, &e);
	free(text);
}

json_t *env_setup_view(struct envctx *c)
{
	json_t *v = load_state(c);
	json_t *channels = json_array();
	for (int i = 0; i < c->n_channels; i++)
		json_array_append_new(channels, json_string(c->channels[i]));
	bool ready = !strcmp(sbx_json_string_or(v, "state", ""), "ready");
	json_object_set_new(v, "allowedChannels", channels);
	json_object_set_new(v, "managedProvisioner", json_boolean(c->managed));
	const char *slash = strrchr(c->provisioner, '/');
	json_object_set_new(v, "provisioner", ready ? json_string(slash ? slash + 1 : c->provisioner) : json_null());
	json_object_set_new(v, "provisionerVersion", ready && c->managed ? json_string(env_pinned_version()) : json_null());
	json_object_set_new(v, "starterPackages", json_pack("{s:[sssss],s:[sss]}", "python", "python=3.12", "numpy=2.0",
							    "pandas=2.2", "scipy=1.14", "matplotlib=3.9", "r", "r-base=4.4",
							    "r-tidyverse=2.0", "r-data.table=1.16"));
	return v;
}

bool env_available(struct envctx *c, char *why, size_t size)
{
	json_t *v = load_state(c);
	bool ok = !strcmp(sbx_json_string_or(v, "state", ""), "ready");
	if (!ok)
		snprintf(why, size, "%s",
			 !enabled() ? "Scientific environments are disabled by configuration"
			 : json_is_string(json_object_get(v, "lastError")) ? json_string_value(json_object_get(v, "lastError"))
									   : "Scientific environments are not configured; install them in System Settings");
	json_decref(v);
	return ok;
}

struct progress {
	struct envctx *c;
	json_t *v;
	bool tty;
};

static void show(struct progress *p, const char *phase, double fraction)
{
	if (p->tty) {
		int width = 30, filled = (int)(fraction * width);
		fprintf(stderr, "\r%-24s [%.*s%*s] %3d%%", phase, filled, "##############################", width - filled, "",
			(int)(fraction * 100));
		if (fraction >= 1)
			fputc('\n', stderr);
	} else {
		fprintf(stderr, "{\"progress\":\"%s\",\"fraction\":%.2f}\n", phase, fraction);
	}
	fflush(stderr);
}

static void on_download(const char *phase, double fraction, void *arg)
{
	show(arg, phase, fraction);
}

static void step(struct progress *p, const char *component_name, const char *phase, const char *message)
{
	char now[32];
	env_now(now);
	json_object_set_new(p->v, "phase", json_string(phase));
	json_object_set_new(p->v, "message", json_string(message));
	json_t *comp = json_object_get(json_object_get(p->v, "components"), component_name);
	json_object_set_new(comp, "state", json_string("installing"));
	json_object_set_new(comp, "phase", json_string(phase));
	json_object_set_new(comp, "message", json_string(message));
	if (json_is_null(json_object_get(comp, "startedAt")))
		json_object_set_new(comp, "startedAt", json_string(now));
	json_object_set_new(comp, "updatedAt", json_string(now));
	save_state(p->c, p->v);
	show(p, phase, 0);
}

static void finish_component(struct progress *p, const char *name, const struct sbx_error *e, const char *action)
{
	char now[32];
	env_now(now);
	json_t *comp = json_object_get(json_object_get(p->v, "components"), name);
	json_object_set_new(comp, "state", json_string(e ? "failed" : "ready"));
	json_object_set_new(comp, "completedAt", json_string(now));
	json_object_set_new(comp, "error", e ? json_string(e->message) : json_null());
	json_object_set_new(comp, "action", e ? json_string(action) : json_null());
	json_object_set_new(comp, "updatedAt", json_string(now));
}

int env_setup_run(struct envctx *c, bool tty, struct sbx_error *e)
{
	if (!enabled()) {
		sbx_error_set(e, SBX_EXIT_POLICY, "disabled", "Scientific environments are disabled by configuration");
		return -1;
	}
	char path[PATH_MAX + 32], now[32];
	snprintf(path, sizeof(path), "%s/locks/setup.lock", c->root);
	int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	while (lock >= 0 && flock(lock, LOCK_EX) != 0 && errno == EINTR)
		;
	/* Whoever ran before us may have finished the job. */
	json_t *v = load_state(c);
	if (!strcmp(sbx_json_string_or(v, "state", ""), "ready")) {
		json_decref(v);
		close(lock);
		return 0;
	}
	struct progress p = { .c = c, .v = v, .tty = tty };
	env_now(now);
	json_object_set_new(v, "state", json_string("installing"));
	json_object_set_new(v, "startedAt", json_string(now));
	json_object_set_new(v, "completedAt", json_null());
	json_object_set_new(v, "error", json_null());
	int rc = 0;
	step(&p, "micromamba", c->managed ? "downloading-provisioner" : "checking",
	     c->managed ? "Downloading the pinned micromamba" : "Checking the configured provisioner");
	if (env_provisioner_ready(c, on_download, &p, e) != 0) {
		finish_component(&p, "micromamba", e,
				 !strcmp(e->code, "verify") ? "The download does not match the pinned SHA-256; check the mirror"
				 : !strcmp(e->code, "write") ? "Check free disk space and permissions of the data directory"
							      : "Check the network or SCIENCE_AGENT_MICROMAMBA_BASE_URL");
		rc = -1;
	} else {
		finish_component(&p, "micromamba", NULL, NULL);
		if (c->cache[0] && access(c->cache, R_OK | X_OK) != 0) {
			sbx_error_set(e, SBX_EXIT_USAGE, "cache", "SCIENCE_AGENT_PACKAGE_CACHE_DIR is not accessible: %s", c->cache);
			rc = -1;
		}
		if (rc == 0 && env_lock(c, true, e) == 0) {
			if (!env_find(c, "environments", "starter-python")) {
				step(&p, "conda", "creating-python-base", "Creating the Python base environment");
				rc = env_bootstrap_starter(c, "python", e);
			}
			env_unlock(c);
		} else {
			rc = -1;
		}
		if (rc == 0) {
			step(&p, "conda", "verifying-python-base", "Verifying the Python base environment");
			json_t *r = env_resolve(c, NULL, NULL, "python", e);
			rc = r && access(json_string_value(json_object_get(r, "interpreter")), X_OK) == 0 ? 0 : -1;
			if (r && rc)
				sbx_error_set(e, SBX_EXIT_INTEGRITY, "verify", "the Python base has no runnable interpreter");
			json_decref(r);
		}
		finish_component(&p, "conda", rc ? e : NULL,
				 "Check free disk space, the allowed Conda channels or the offline cache, then retry");
	}
	env_now(now);
	json_object_set_new(v, "completedAt", json_string(now));
	if (rc == 0) {
		json_object_set_new(v, "state", json_string("ready"));
		json_object_set_new(v, "phase", json_string("complete"));
		json_object_set_new(v, "message", json_string("Scientific environments are ready"));
		show(&p, "complete", 1);
	} else {
		json_object_set_new(v, "state", json_string("failed"));
		json_object_set_new(v, "phase", json_string("failed"));
		json_object_set_new(v, "message", json_string(e->message));
		json_object_set_new(v, "error", json_string(e->message));
		json_object_set_new(v, "lastError", json_string(e->message));
	}
	save_state(c, v);
	json_decref(v);
	close(lock);
	return rc;
}
