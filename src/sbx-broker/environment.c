/* environment.c — what a host job runs with (npu.md 2.4): the managed
 * interpreter of its revision (asked of sbx-env), and the host environment
 * filtered to what Ascend user space reads, secrets never included. */
#include "broker.h"
#include "../lib/program_path.h"
#include "../lib/child_env.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/stage_call.h"
#include "../lib/strvec.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

int broker_managed_python(const char *revision, char *python, char *site, size_t size, struct sbx_error *e)
{
	char env[PATH_MAX];
	if (sbx_sibling_program("sbx-env", env, sizeof(env)) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", "Managed scientific environments are unavailable to the NPU Broker");
		return -1;
	}
	const char *argv[] = { env, "resolve", "--revision", revision, "--language", "python", NULL };
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .die_with_parent = true };
	json_t *doc = sbx_stage_call(&s, 60000, 1u << 20, e);
	if (!doc) {
		e->exit_code = SBX_EXIT_USAGE;
		snprintf(e->code, sizeof(e->code), "bad-request");
		return -1;
	}
	char *real = realpath(sbx_json_string_or(doc, "interpreter", ""), NULL);
	char pattern[PATH_MAX + 64];
	snprintf(pattern, sizeof(pattern), "%s/lib/python[0-9]*.[0-9]*/site-packages", sbx_json_string_or(doc, "prefix", "/nonexistent"));
	json_decref(doc);
	glob_t g = { 0 };
	char *site_real = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc ? realpath(g.gl_pathv[0], NULL) : NULL;
	globfree(&g);
	bool ok = real && site_real && strlen(real) < size && strlen(site_real) < size;
	if (ok) {
		strcpy(python, real);
		strcpy(site, site_real);
	} else {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-request",
			      "The managed Python of environment revision %.200s or its site-packages is missing", revision);
	}
	free(real);
	free(site_real);
	return ok ? 0 : -1;
}

static const char *const kept_names[] = {
	"ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_GLOBAL_LOG_LEVEL",
	"ASCEND_SLOG_PRINT_TO_STDOUT", "ASCEND_RT_VISIBLE_DEVICES", "CANN_PATH", "CANN_HOME", "DEVICE_ID",
	"HCCL_CONNECT_TIMEOUT", "HCCL_WHITELIST_DISABLE", "HMMER_HOME", "LANG", "LC_ALL", "LD_LIBRARY_PATH",
	"MINDSPORE_HOME", "MS_COMPILER_CACHE_PATH", "MS_DEV_RUNTIME_CONF", "MS_ROLE", "PATH", "RANK_ID", "RANK_SIZE",
	NULL,
};
static const char *const kept_prefixes[] = { "ASCEND_", "ANTIBODY_", "CANN_", "HCCL_", "HMMER_", "MINDSCIENCE_",
					     "MINDSPORE_", "MS_", "NPU_", "RANK_", NULL };
/* HOME and PYTHONPATH are set below. */

static bool kept(const char *name, size_t len)
{
	for (size_t i = 0; kept_names[i]; i++)
		if (strlen(kept_names[i]) == len && !strncmp(name, kept_names[i], len))
			return true;
	for (size_t i = 0; kept_prefixes[i]; i++)
		if (len >= strlen(kept_prefixes[i]) && !strncmp(name, kept_prefixes[i], strlen(kept_prefixes[i])))
			return true;
	return false;
}

static void add_path_entries(struct sbx_strvec *parts, const char *list)
{
	char *copy = strdup(list ? list : ""), *save = NULL;
	for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save)) {
		bool seen = false;
		for (size_t i = 0; i < parts->len; i++)
			seen = seen || !strcmp(parts->items[i], p);
		if (!seen)
			sbx_strvec_push(parts, p);
	}
	free(copy);
}

char **broker_job_environ(const char *workspace, const char *home, const char *site_packages)
{
	struct sbx_strvec out, py;
	sbx_strvec_init(&out);
	sbx_strvec_init(&py);
	for (char **e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		/* The one secret-name rule every child's environment follows. */
		if (eq && kept(*e, (size_t)(eq - *e)) && !sbx_env_name_is_secret(*e, (size_t)(eq - *e)))
			sbx_strvec_push(&out, *e);
	}
	/* The revision's site-packages first, then the host's entries. */
	if (site_packages)
		add_path_entries(&py, site_packages);
	add_path_entries(&py, getenv("PYTHONPATH"));
	if (py.len) {
		size_t total = 16;
		for (size_t i = 0; i < py.len; i++)
			total += strlen(py.items[i]) + 1;
		char *joined = calloc(1, total);
		if (joined) {
			strcpy(joined, "PYTHONPATH=");
			for (size_t i = 0; i < py.len; i++) {
				strcat(joined, py.items[i]);
				if (i + 1 < py.len)
					strcat(joined, ":");
			}
			sbx_strvec_push(&out, joined);
			free(joined);
		}
	}
	sbx_strvec_free(&py);
	/* HOME, TMPDIR and caches in the runner-owned per-job directory, and
	 * no user site-packages: nothing the workload planted runs. */
	sbx_strvec_pushf(&out, "HOME=%s/home", home);
	sbx_strvec_pushf(&out, "TMPDIR=%s/tmp", home);
	sbx_strvec_pushf(&out, "XDG_CACHE_HOME=%s/home/.cache", home);
	sbx_strvec_push(&out, "PYTHONNOUSERSITE=1");
	sbx_strvec_push(&out, "ANTIBODY_ALLOW_HOST_NPU_PYTHON=1");
	sbx_strvec_push(&out, "SCIENCE_AGENT_NPU_BROKER=1");
	sbx_strvec_push(&out, "SCIENCE_AGENT_NPU_BROKER_MODE=1");
	sbx_strvec_pushf(&out, "SCIENCE_AGENT_NPU_WORKSPACE=%s", workspace);
	if (out.failed) {
		sbx_strvec_free(&out);
		return NULL;
	}
	/* The vector's items, NULL-terminated, become the caller's. */
	char **env = out.items;
	return env;
}

void broker_free_environ(char **env)
{
	for (char **p = env; p && *p; p++)
		free(*p);
	free(env);
}
