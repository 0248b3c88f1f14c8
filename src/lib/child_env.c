/* child_env.c — the pass-list every spawned child's environment is built
 * from (child_env.h), and taking a secret out of our own environment. */
#include "child_env.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static const char *const exact[] = {
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM", "NO_COLOR",
	"XDG_STATE_HOME", "XDG_CACHE_HOME", "SCIENTIFIC_ENVS", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
};
static const char *const prefixes[] = { "LC_", "SBX_", "SCIENCE_AGENT_" };
static const char *const secret_words[] = { "TOKEN",  "SECRET",     "PASSWORD", "PASSWD",     "CREDENTIAL",
					     "APIKEY", "API-KEY",    "HMAC",     "PRIVATEKEY", "PRIVATE-KEY",
					     "ACCESSKEY", "ACCESS-KEY" };

static bool name_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && !memcmp(name, want, len);
}

/* The comma-separated list holds the name exactly. */
static bool listed(const char *list, const char *name, size_t len)
{
	int seen = 0;
	for (const char *p = list; p && *p && seen < SBX_PASS_ENV_MAX; seen++) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == len && !memcmp(p, name, len))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

int sbx_env_name_is_secret(const char *name, size_t len)
{
	char upper[256];
	if (len >= sizeof(upper))
		return 1;
	for (size_t i = 0; i < len; i++)
		upper[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
	upper[len] = '\0';
	/* API_KEY and API-KEY alike: compared with '_' read as nothing. */
	char squeezed[256];
	size_t k = 0;
	for (size_t i = 0; i < len; i++)
		if (upper[i] != '_')
			squeezed[k++] = upper[i];
	squeezed[k] = '\0';
	for (size_t i = 0; i < sizeof(secret_words) / sizeof(secret_words[0]); i++)
		if (strstr(upper, secret_words[i]) || strstr(squeezed, secret_words[i]))
			return 1;
	/* ..._KEY and KEY_...: a key of any kind. */
	return (len >= 4 && !strcmp(upper + len - 4, "_KEY")) || !strncmp(upper, "KEY_", 4) || strstr(upper, "_KEY_") != NULL;
}

int sbx_child_env_passes(const char *name)
{
	size_t len = strcspn(name, "=");
	if (len == 0 || sbx_env_name_is_secret(name, len))
		return 0;
	if (!strncmp(name, "MAPI_", 5))
		return 0;
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (name_is(name, len, exact[i]))
			return 1;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (len > strlen(prefixes[i]) && !strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return listed(getenv("SBX_PASS_ENV"), name, len);
}

char **sbx_child_environ(void)
{
	size_t n = 0, k = 0;
	while (environ && environ[n])
		n++;
	char **out = calloc(n + 1, sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strchr(environ[i], '=') && sbx_child_env_passes(environ[i]))
			out[k++] = environ[i];
	return out;
}

char *sbx_env_take(const char *name)
{
	char *v = getenv(name);
	char *copy = v && *v ? strdup(v) : NULL;
	/* unsetenv leaves the original block (/proc/<pid>/environ) as it was. */
	if (v)
		explicit_bzero(v, strlen(v));
	unsetenv(name);
	return copy;
}
