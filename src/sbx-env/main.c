/* sbx-env — managed micromamba scientific environments (environments.md):
 * setup, list, create, install, uninstall, delete, revisions, snapshot
 * bytes, and the prefix an execution mounts. JSON out, one command each. */
#include "env.h"
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-env status | setup [--wait] | list | revisions\n"
		"       sbx-env create NAME --language python|r [--base ID]\n"
		"       sbx-env install [--manager conda|pip|cran|bioconductor] [--channel C]... [--index-url URL]\n"
		"                      [--source upstream|tsinghua|ustc|huawei] [--workspace DIR] -- ID PKG...\n"
		"       sbx-env uninstall ID PKG... | delete ID | snapshot REV\n"
		"       sbx-env resolve [--revision REV | --environment ID] --language python|r\n"
		"\n"
		"State lives under <data dir>/scientific-envs. See sbx-env(1).\n");
	sbx_cli_print_exit_codes(out);
}


/* Every list, create and mutation needs ready environments. */
static void need_available(struct envctx *c)
{
	char why[512];
	struct sbx_error e;
	if (!env_available(c, why, sizeof(why))) {
		sbx_error_set(&e, SBX_EXIT_POLICY, "unavailable", "%s", why);
		sbx_die(&e);
	}
}

static json_t *catalog_array(struct envctx *c, const char *kind)
{
	struct sbx_error e;
	if (env_lock(c, false, &e) != 0)
		sbx_die(&e);
	env_unlock(c);
	return json_deep_copy(json_object_get(c->catalog, kind));
}

/* `setup` without --wait: the run goes on in its own session; we answer
 * once it has said it started. */
static int setup_detached(struct envctx *c)
{
	int ready[2];
	if (pipe(ready) != 0)
		return SBX_EXIT_INTERNAL;
	pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		setsid();
		if (fork() != 0)
			_exit(0);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		close(ready[1]); /* the parent reads EOF: the run is under way */
		struct sbx_error e;
		_exit(env_setup_run(c, false, &e) == 0 ? 0 : 1);
	}
	close(ready[1]);
	char b;
	while (read(ready[0], &b, 1) > 0)
		;
	close(ready[0]);
	waitpid(pid, NULL, 0);
	return sbx_json_answer(env_setup_view(c));
}

static struct envctx ctx;
static json_t *channels;

/* Every path out of main ends here: nothing the process held outlives it. */
static void release(void)
{
	json_decref(channels);
	json_decref(ctx.catalog);
	curl_global_cleanup();
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "language", required_argument, NULL, 'l' }, { "base", required_argument, NULL, 'b' },
		{ "manager", required_argument, NULL, 'm' }, { "channel", required_argument, NULL, 'c' },
		{ "index-url", required_argument, NULL, 'i' }, { "workspace", required_argument, NULL, 'w' },
		{ "source", required_argument, NULL, 's' },
		{ "revision", required_argument, NULL, 'r' }, { "environment", required_argument, NULL, 'E' },
		{ "wait", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, 'V' }, { NULL, 0, NULL, 0 },
	};
	const char *language = NULL, *base = NULL, *manager = NULL, *index_url = NULL, *workspace = NULL, *revision = NULL,
		   *environment = NULL, *source = NULL;
	bool wait = false;
	struct envctx *cp = &ctx;
	struct sbx_error e;
	channels = json_array();
	atexit(release);
	int opt;

	sbx_diag_program("sbx-env");
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return SBX_EXIT_OK;
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		sbx_cli_print_version("sbx-env");
		return SBX_EXIT_OK;
	}
	if (argc < 2)
		sbx_cli_usage_error("sbx-env", "expected a command (see --help)");
	const char *cmd = argv[1];
	opterr = 0;
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'l': language = optarg; break;
		case 'b': base = optarg; break;
		case 'm': manager = optarg; break;
		case 'c': json_array_append_new(channels, json_string(optarg)); break;
		case 'i': index_url = optarg; break;
		case 's': source = optarg; break;
		case 'w': workspace = optarg; break;
		case 'r': revision = optarg; break;
		case 'E': environment = optarg; break;
		case 'W': wait = true; break;
		case 'h': usage(stdout); return SBX_EXIT_OK;
		default: sbx_cli_bad_option("sbx-env", argv[optind - 1]);
		}
	}
	char **rest = argv + optind;
	int n_rest = argc - optind;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (env_open(cp, &e) != 0)
		sbx_die(&e);

	if (!strcmp(cmd, "status"))
		return sbx_json_answer(env_setup_view(cp));
	if (!strcmp(cmd, "setup")) {
		if (!wait)
			return setup_detached(cp);
		if (env_setup_run(cp, isatty(2), &e) != 0)
			sbx_die(&e);
		return sbx_json_answer(env_setup_view(cp));
	}
	if (!strcmp(cmd, "resolve")) {
		if (!language)
			sbx_cli_usage_error("sbx-env", "resolve needs --language python|r");
		json_t *r = env_resolve(cp, revision, environment, language, &e);
		if (!r)
			sbx_die(&e);
		return sbx_json_answer(r);
	}
	if (!strcmp(cmd, "snapshot")) {
		char *bytes;
		size_t len;
		if (n_rest != 1)
			sbx_cli_usage_error("sbx-env", "snapshot takes one REV");
		if (env_snapshot_bytes(cp, rest[0], &bytes, &len, &e) != 0)
			sbx_die(&e);
		fwrite(bytes, 1, len, stdout);
		free(bytes);
		return SBX_EXIT_OK;
	}
	need_available(cp);
	json_t *out = NULL;
	if (!strcmp(cmd, "list")) {
		out = catalog_array(cp, "environments");
	} else if (!strcmp(cmd, "revisions")) {
		out = catalog_array(cp, "revisions");
	} else if (!strcmp(cmd, "create")) {
		if (n_rest != 1 || !language)
			sbx_cli_usage_error("sbx-env", "create takes NAME and --language python|r");
		out = env_create(cp, rest[0], language, base, &e);
	} else if (!strcmp(cmd, "install") || !strcmp(cmd, "uninstall")) {
		if (n_rest < 1)
			sbx_cli_usage_error("sbx-env", "install and uninstall take an environment ID and packages");
		json_t *pkgs = json_array();
		for (int i = 1; i < n_rest; i++)
			json_array_append_new(pkgs, json_string(rest[i]));
		out = !strcmp(cmd, "install") ? env_install(cp, rest[0], manager, pkgs, channels, index_url, source, workspace, &e)
					      : env_uninstall(cp, rest[0], pkgs, &e);
		json_decref(pkgs);
	} else if (!strcmp(cmd, "delete")) {
		if (n_rest != 1)
			sbx_cli_usage_error("sbx-env", "delete takes one environment ID");
		if (env_delete(cp, rest[0], &e) == 0)
			out = json_pack("{s:s}", "deleted", rest[0]);
	} else {
		sbx_cli_usage_error("sbx-env", "unknown command (see --help)");
	}
	if (!out)
		sbx_die(&e);
	return sbx_json_answer(out);
}
