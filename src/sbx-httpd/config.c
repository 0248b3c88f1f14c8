/* config.c — runner-api 1.2: every variable trimmed, empty means the
 * default, an invalid value stops startup naming the variable. */
#include "config.h"
#include "../lib/child_env.h"
#include "../lib/diag.h"
#include "../lib/error.h"
#include "../lib/exitcodes.h"
#include "../lib/quota.h"

#include <limits.h>
#include <stdbool.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define SAFE_INTEGER_MAX 9007199254740991LL

static _Noreturn void bad(const char *name, const char *rule, const char *value)
{
	struct sbx_error e;
	sbx_error_set(&e, SBX_EXIT_USAGE, "bad-config", "%s: %s (got \"%.200s\")", name, rule, value);
	sbx_die(&e);
}

/* The trimmed value, or NULL when unset or blank. */
static const char *value(const char *name, char *buf, size_t size)
{
	const char *v = getenv(name);
	if (!v)
		return NULL;
	while (isspace((unsigned char)*v))
		v++;
	size_t n = strlen(v);
	while (n && isspace((unsigned char)v[n - 1]))
		n--;
	if (n == 0)
		return NULL;
	if (n >= size)
		bad(name, "too long", "...");
	memcpy(buf, v, n);
	buf[n] = '\0';
	return buf;
}

static long long integer(const char *name, long long dflt, long long min, long long max, const char *rule)
{
	char buf[64];
	const char *v = value(name, buf, sizeof(buf));
	if (!v)
		return dflt;
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (*end || errno || x < min || x > max || !isdigit((unsigned char)v[0]))
		bad(name, rule, v);
	return x;
}

static bool flag(const char *name, bool dflt)
{
	char buf[64];
	const char *v = value(name, buf, sizeof(buf));
	if (!v)
		return dflt;
	return !strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes");
}

/* A path relative to the working directory made absolute. */
static void absolute(const char *name, const char *v, char *out, size_t size)
{
	char cwd[PATH_MAX];
	int n = v[0] == '/' ? snprintf(out, size, "%s", v)
			    : snprintf(out, size, "%s/%s", getcwd(cwd, sizeof(cwd)) ? cwd : ".", v);
	if (n < 0 || (size_t)n >= size)
		bad(name, "the path is too long", v);
}

/* SBX_METRICS_LISTEN=HOST:PORT ([v6]:PORT; port 0: any free one),
 * SBX_METRICS_AUTH=bearer|none, SBX_METRICS_TOKEN (read once, erased). */
static void metrics_listener(struct config *c)
{
	char buf[300];
	const char *v = value("SBX_METRICS_LISTEN", buf, sizeof(buf)), *auth;
	if (v) {
		const char *colon = strrchr(v, ':');
		size_t host_len = colon ? (size_t)(colon - v) : 0;
		if (host_len >= 2 && v[0] == '[' && v[host_len - 1] == ']')
			v++, host_len -= 2;
		char *end;
		errno = 0;
		long port = colon ? strtol(colon + 1, &end, 10) : -1;
		if (!colon || !host_len || host_len >= sizeof(c->metrics_host) || !isdigit((unsigned char)colon[1]) ||
		    *end || errno || port > 65535)
			bad("SBX_METRICS_LISTEN", "HOST:PORT, as 127.0.0.1:9311 or [::1]:9311", buf);
		memcpy(c->metrics_host, v, host_len);
		c->metrics_host[host_len] = '\0';
		c->metrics_port = (int)port;
	}
	if ((auth = value("SBX_METRICS_AUTH", buf, sizeof(buf))) && strcmp(auth, "bearer") != 0 && strcmp(auth, "none") != 0)
		bad("SBX_METRICS_AUTH", "bearer (the default) or none", auth);
	c->metrics_no_auth = auth && !strcmp(auth, "none");
	const char *token = value("SBX_METRICS_TOKEN", c->metrics_token, sizeof(c->metrics_token));
	c->metrics_token_len = token ? strlen(token) : 0;
	free(sbx_env_take("SBX_METRICS_TOKEN"));
	if (token && !c->metrics_host[0])
		bad("SBX_METRICS_TOKEN", "only the metrics listener (SBX_METRICS_LISTEN) takes a token of its own", "...");
	if (token && c->metrics_no_auth)
		bad("SBX_METRICS_TOKEN", "SBX_METRICS_AUTH=none asks no token", "...");
}

void config_load(struct config *c)
{
	char buf[PATH_MAX];
	const char *v;

	memset(c, 0, sizeof(*c));
	snprintf(c->host, sizeof(c->host), "%s", (v = value("SCIENCE_AGENT_RUNNER_HOST", buf, sizeof(c->host))) ? v : "127.0.0.1");
	c->port = (int)integer("SCIENCE_AGENT_RUNNER_PORT", 4311, 0, 65535, "an integer from 0 to 65535");
	if ((v = value("SCIENCE_AGENT_RUNNER_SOCKET", buf, sizeof(buf)))) {
		char path[PATH_MAX];
		absolute("SCIENCE_AGENT_RUNNER_SOCKET", v, path, sizeof(path));
		if (strlen(path) >= sizeof(c->socket_path))
			bad("SCIENCE_AGENT_RUNNER_SOCKET", "longer than the 107 bytes a Unix socket path may have", path);
		snprintf(c->socket_path, sizeof(c->socket_path), "%s", path);
	}
	v = value("SCIENCE_AGENT_RUNNER_TOKEN", c->token, sizeof(c->token));
	if (!v)
		snprintf(c->token, sizeof(c->token), "sciencediscovery-runner-local");
	c->token_len = strlen(c->token);
	/* Gone from our environment and from /proc/<pid>/environ: no child
	 * could inherit it even past the pass-list (child_env.h). */
	free(sbx_env_take("SCIENCE_AGENT_RUNNER_TOKEN"));
	absolute("SCIENCE_AGENT_DATA_DIR",
		 (v = value("SCIENCE_AGENT_DATA_DIR", buf, sizeof(buf))) ? v : ".sciencediscovery-data", c->data_dir,
		 sizeof(c->data_dir));
	snprintf(c->bwrap, sizeof(c->bwrap), "%s", (v = value("SCIENCE_AGENT_BWRAP_PATH", buf, sizeof(buf))) ? v : "bwrap");
	c->exec_timeout_ms = integer("SCIENCE_AGENT_EXEC_TIMEOUT_MS", 0, 0, SAFE_INTEGER_MAX, "a non-negative safe integer");
	c->run_retention_s = integer("SCIENCE_AGENT_RUN_RETENTION_SECONDS", 0, 0, 86400 * 365, "an integer from 0 to 31536000");
	c->max_output_bytes = integer("SCIENCE_AGENT_MAX_OUTPUT_BYTES", 1073741824LL, 0, SAFE_INTEGER_MAX,
				      "a non-negative safe integer (0: never truncate)");
	c->max_workspace_bytes = integer("SCIENCE_AGENT_MAX_WORKSPACE_BYTES", 10737418240LL, 0, SAFE_INTEGER_MAX,
					 "a non-negative safe integer (0: unlimited)");
	c->max_workspace_files = integer("SCIENCE_AGENT_MAX_WORKSPACE_FILES", (long long)SBX_QUOTA_DEFAULT_FILES, 0,
					 SAFE_INTEGER_MAX, "a non-negative safe integer (0: unlimited)");
	long long kernel_idle = integer("SCIENCE_AGENT_KERNEL_IDLE_MS", 0, 0, SAFE_INTEGER_MAX, "a non-negative safe integer");
	(void)integer("SCIENCE_AGENT_SHELL_IDLE_MS", kernel_idle, 0, SAFE_INTEGER_MAX, "a non-negative safe integer");
	c->signature_max_age_ms = integer("SCIENCE_AGENT_EXECUTION_SIGNATURE_MAX_AGE_MS", 30000, 1, SAFE_INTEGER_MAX,
					  "a positive integer number of milliseconds");
	c->max_connections = integer("SCIENCE_AGENT_MAX_CONNECTIONS", 4096, 16, 1 << 20, "an integer from 16 to 1048576");
	c->max_requests = integer("SCIENCE_AGENT_MAX_REQUESTS", 512, 1, 1 << 16, "an integer from 1 to 65536");
	c->warm_runners = integer("SBX_WARM_RUNNERS", 2, 0, 16, "an integer from 0 to 16");
	c->exec_retention_s = integer("SCIENCE_AGENT_EXECUTION_RETENTION_SECONDS", 604800, 0, 86400LL * 3650,
				      "an integer from 0 (no age limit) to 315360000");
	c->exec_log_max_bytes = integer("SCIENCE_AGENT_EXECUTION_LOG_MAX_BYTES", 4294967296LL, 0, SAFE_INTEGER_MAX,
					"a non-negative safe integer (0: no cap)");
	c->snapshot_keep = integer("SCIENCE_AGENT_REMOTE_SNAPSHOT_KEEP", 20, 0, 1 << 20, "an integer from 0 (keep all) to 1048576");
	c->snapshot_grace_s = integer("SCIENCE_AGENT_REMOTE_SNAPSHOT_GRACE_SECONDS", 3600, 0, 86400 * 365,
				      "an integer from 0 to 31536000");
	c->sse_max_clients = integer("SBX_SSE_MAX_CLIENTS", 256, 1, 65536, "an integer from 1 to 65536");
	c->sse_keepalive_s = integer("SBX_SSE_KEEPALIVE_SECONDS", 15, 1, 3600, "an integer from 1 to 3600");
	c->sse_max_s = integer("SBX_SSE_MAX_SECONDS", 3600, 1, 86400 * 7, "an integer from 1 to 604800");
	metrics_listener(c);
	c->npu_broker = flag("SCIENCE_AGENT_NPU_BROKER", false);
	c->scientific_envs = flag("SCIENTIFIC_ENVS", true);
	if ((v = value("SCIENCE_AGENT_SANDBOX_PROVIDER", buf, sizeof(buf))) && strcmp(v, "auto") != 0 &&
	    strcmp(v, "bubblewrap") != 0)
		bad("SCIENCE_AGENT_SANDBOX_PROVIDER",
		    strcmp(v, "seatbelt") ? "auto, bubblewrap or seatbelt" : "seatbelt is macOS only; this is Linux", v);
}
