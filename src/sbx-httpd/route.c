/* route.c — the router of runner-api 2 and 4 (and sbx's /secrets): GET
 * /health first, then the bearer for everything else, then the path to its
 * handler; ids in a path are matched raw and then decoded, as upstream's router does. */
#include "route.h"
#include "auth.h"
#include "environments.h"
#include "handlers.h"
#include "history.h"
#include "npu.h"
#include "remote.h"
#include "reply.h"
#include "server.h"
#include "secrets_call.h"
#include "skills_call.h"
#include "speculative.h"
#include "../lib/secret_store.h"
#include "../lib/json.h"
#include "../lib/text.h"
#include "info.h"
#include "metrics_text.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <string.h>

/* decodeURIComponent: %XX escapes decoded, the result valid UTF-8 without
 * NUL; -1 ("URI malformed") otherwise. */
static int decode_component(const char *in, size_t len, char *out, size_t size)
{
	size_t o;
	if (sbx_percent_decode(in, len, out, size, &o) != 0)
		return -1;
	for (size_t k = 0; k < o;) {
		int n = sbx_utf8_sequence((const unsigned char *)out + k, o - k);
		if (n <= 0)
			return -1;
		k += (size_t)n;
	}
	return 0;
}

/* "/prefix/<id><suffix>" with one non-empty raw segment as id, matched
 * before decoding as upstream's router does: 1 (id decoded), 0 (not this
 * route), -1 (this route, but the segment does not decode). */
static int match(const char *path, const char *prefix, const char *suffix, char *id, size_t size)
{
	size_t p = strlen(prefix), s = strlen(suffix), n = strlen(path);
	if (n <= p + s || strncmp(path, prefix, p) != 0 || strcmp(path + n - s, suffix) != 0)
		return 0;
	size_t len = n - p - s;
	if (memchr(path + p, '/', len))
		return 0;
	return decode_component(path + p, len, id, size) == 0 ? 1 : -1;
}

/* A route with an id: its handler, 400 "URI malformed" when the id does
 * not decode, or on to the next route. */
#define ROUTE_ID(cond, prefix, suffix, call)                                 \
	do {                                                                  \
		int matched_ = (cond) ? match(r->path, prefix, suffix, id, sizeof(id)) : 0; \
		if (matched_ < 0)                                             \
			return reply_error(r, 400, "URI malformed");          \
		if (matched_ > 0)                                             \
			return (call);                                        \
	} while (0)

/* A secret's route: its handler when id is a secret name, else 404. */
#define SECRET(call) (sbx_secret_name_ok(id) ? (call) : reply_error(r, 404, "Not found"))

static bool is(struct req *r, const char *method, const char *path)
{
	return !strcmp(r->method, method) && !strcmp(r->path, path);
}

/* Route parameters the upstream matches by pattern (else 404). */
static bool uuid_like(const char *id)
{
	return strlen(id) == 36 && strspn(id, "0123456789abcdef-") == 36;
}

static bool sha256_like(const char *id)
{
	return strlen(id) == 64 && strspn(id, "0123456789abcdef") == 64;
}

enum MHD_Result route(struct req *r)
{
	char id[512] = "";
	bool get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");

	if (is(r, "GET", "/health"))
		return handle_health(r);
	if (!auth_bearer(&g_server.cfg, r))
		return reply_error(r, 401, "Unauthorized");
	if (is(r, "GET", "/metrics")) /* sbx's extension: Prometheus text */
		return handle_metrics(r);
	if (is(r, "GET", "/status"))
		return handle_status(r);
	if (is(r, "GET", "/resources"))
		return handle_resources(r);
	if (is(r, "GET", "/kernels"))
		return reply_json(r, 200, json_array());
	if (is(r, "POST", "/kernels/teardown"))
		return handle_kernels(r, NULL);
	ROUTE_ID(post, "/kernels/", "/teardown", handle_kernels(r, id));
	if (is(r, "POST", "/execute"))
		return handle_execute(r, false);
	if (is(r, "POST", "/execute-shell"))
		return handle_execute(r, true);
	if (is(r, "POST", "/shell-executions"))
		return handle_managed_start(r);
	ROUTE_ID(get, "/shell-executions/", "/logs", handle_managed_logs(r, id));
	ROUTE_ID(get, "/shell-executions/", "/events", handle_managed_events(r, id)); /* sbx's extension (sse.c) */
	ROUTE_ID(post, "/shell-executions/", "/cancel", handle_managed_cancel(r, id));
	/* sbx's extension: a speculative execution's pending change (speculative.c). */
	ROUTE_ID(post, "/shell-executions/", "/commit", handle_speculative(r, id, true));
	ROUTE_ID(post, "/shell-executions/", "/discard", handle_speculative(r, id, false));
	ROUTE_ID(get, "/shell-executions/", "", handle_managed_get(r, id));

	if (is(r, "GET", "/environments"))
		return handle_environments(r, NULL, "list");
	if (is(r, "POST", "/environments"))
		return handle_environments(r, NULL, "create");
	if (is(r, "GET", "/environment-setup"))
		return handle_environments(r, NULL, "setup-view");
	if (is(r, "POST", "/environment-setup"))
		return handle_environments(r, NULL, "setup");
	if (is(r, "GET", "/environment-revisions"))
		return handle_environments(r, NULL, "revisions");
	ROUTE_ID(!strcmp(r->method, "DELETE"), "/environments/", "", handle_environments(r, id, "delete"));
	ROUTE_ID(post, "/environments/", "/install", handle_environments(r, id, "install"));
	ROUTE_ID(post, "/environments/", "/uninstall", handle_environments(r, id, "uninstall"));
	ROUTE_ID(get, "/environment-revisions/", "/snapshot", handle_environments(r, id, "snapshot"));

	/* Remote workspaces and skill packages (remote.c, snapshots.c, skills_call.c). */
	if (is(r, "GET", "/remote-workspace/files"))
		return handle_remote(r, "list", NULL);
	if (is(r, "POST", "/remote-workspace/files"))
		return handle_remote(r, "list-post", NULL);
	if (is(r, "GET", "/remote-workspace/file"))
		return handle_remote(r, "read", NULL);
	if (is(r, "PUT", "/remote-workspace/file"))
		return handle_remote(r, "write", NULL);
	if (is(r, "PUT", "/remote-workspace/transfer-file"))
		return handle_remote(r, "transfer", NULL);
	if (is(r, "DELETE", "/remote-workspace"))
		return handle_remote(r, "delete", NULL);
	if (is(r, "POST", "/remote-workspace/snapshots"))
		return handle_remote(r, "snapshot", NULL);
	ROUTE_ID(get, "/remote-workspace/snapshots/", "/file", uuid_like(id) ? handle_remote(r, "snapshot-file", id) : reply_error(r, 404, "Not found"));
	if (is(r, "POST", "/skill-packages"))
		return handle_skills(r, NULL);
	ROUTE_ID(get, "/skill-packages/", "", sha256_like(id) ? handle_skills(r, id) : reply_error(r, 404, "Not found"));

	/* sbx's extension: a workspace's history (history.c). */
	if (is(r, "GET", "/workspace-versions"))
		return handle_history(r, "versions");
	if (is(r, "GET", "/workspace-versions/diff"))
		return handle_history(r, "diff");
	if (is(r, "POST", "/workspace-versions/restore"))
		return handle_history(r, "restore");
	if (is(r, "POST", "/workspace-versions/fork"))
		return handle_history(r, "fork");

	/* The secret store (secrets_call.c); a path that names no valid secret is 404. */
	if (is(r, "GET", "/secrets"))
		return handle_secrets(r, NULL, "list");
	ROUTE_ID(!strcmp(r->method, "PUT"), "/secrets/", "", SECRET(handle_secrets(r, id, "put")));
	ROUTE_ID(post, "/secrets/", "/rotate", SECRET(handle_secrets(r, id, "rotate")));
	ROUTE_ID(!strcmp(r->method, "DELETE"), "/secrets/", "", SECRET(handle_secrets(r, id, "rm")));

	/* The NPU broker and devices (npu.c). */
	if (is(r, "GET", "/npu/workloads"))
		return handle_npu(r, "workloads", NULL);
	if (is(r, "GET", "/npu/devices"))
		return handle_npu(r, "devices", NULL);
	if (is(r, "GET", "/npu/jobs"))
		return handle_npu(r, "list", NULL);
	if (is(r, "POST", "/npu/jobs"))
		return handle_npu(r, "submit", NULL);
	ROUTE_ID(get, "/npu/jobs/", "/logs", handle_npu(r, "logs", id));
	ROUTE_ID(get, "/npu/jobs/", "/result", handle_npu(r, "result", id));
	ROUTE_ID(post, "/npu/jobs/", "/cancel", handle_npu(r, "cancel", id));
	ROUTE_ID(get, "/npu/jobs/", "", handle_npu(r, "get", id));
	return reply_error(r, 404, "Not found");
}
