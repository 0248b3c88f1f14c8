/* launch_env.c — the env rules of a launch spec. Refusals are errors, never
 * silent drops: a caller must learn that its variable did not arrive. */
#include "launch_env.h"
#include "exitcodes.h"

#include <string.h>

/* Set by the launch itself (or by stages that extend it: egress, NPU,
 * the worker channel): a spec must not override them. */
static const char *const reserved[] = {
	"HOME", "PATH", "LANG", "PYTHONNOUSERSITE", "PYTHONPATH", "R_ENVIRON_USER",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO",
	"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy",
	"ALL_PROXY", "all_proxy", "PIP_PROXY", "npm_config_proxy", "npm_config_https_proxy",
	"YARN_HTTP_PROXY", "YARN_HTTPS_PROXY", "TOOLCHAIN_HOME", "OLDPWD", "PWD", "SHLVL", "_", NULL,
};
static const char *const reserved_prefixes[] = { "ASCEND_", "SBX_", "SCIENCEDISCOVERY_", "GIT_CONFIG_", NULL };

/* Change what the loader, the shell or Python run before the workload. */
static const char *const blocked[] = {
	"BASH_ENV", "ENV", "IFS", "CDPATH", "PROMPT_COMMAND", "PS4", "SHELLOPTS", "BASHOPTS",
	"PYTHONHOME", "PYTHONSTARTUP", NULL,
};
static const char *const blocked_prefixes[] = { "LD_", "BASH_FUNC_", NULL };

static int in_list(const char *name, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(name, list[i]) == 0)
			return 1;
	return 0;
}

static int has_prefix(const char *name, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strncmp(name, list[i], strlen(list[i])) == 0)
			return 1;
	return 0;
}

static int well_formed(const char *name)
{
	if (!((*name >= 'A' && *name <= 'Z') || (*name >= 'a' && *name <= 'z') || *name == '_'))
		return 0;
	for (const char *p = name + 1; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return 0;
	return strlen(name) <= 256;
}

int sbx_env_name_allowed(const char *name, struct sbx_error *e)
{
	if (!well_formed(name)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-env-name",
			      "env.%.64s: a name must match ^[A-Za-z_][A-Za-z0-9_]*$ (at most 256 characters)", name);
		return -1;
	}
	if (in_list(name, reserved) || has_prefix(name, reserved_prefixes)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "reserved-env-name",
			      "env.%s: reserved, the launch sets it itself", name);
		return -1;
	}
	if (in_list(name, blocked) || has_prefix(name, blocked_prefixes)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "blocked-env-name",
			      "env.%s: refused, it changes what runs before the workload", name);
		return -1;
	}
	return 0;
}
