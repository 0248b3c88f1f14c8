/* secrets_call.c — /secrets as sbx-secrets children (a body goes to the
 * stage on stdin, never into argv, a log or an answer), and the check of
 * an execution's secret references against its network policy. */
#include "secrets_call.h"
#include "auth.h"
#include "body.h"
#include "server.h"
#include "metrics.h"
#include "../lib/exitcodes.h"
#include "../lib/secret_store.h"
#include "../lib/stage_call.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SECRETS_OUTPUT_CAP (1u << 20)
#define SECRETS_REFS_MAX 64

/* Runs sbx-secrets --data-dir D ARGS with body (when not NULL) on stdin. */
static json_t *call(const char *const *args, const char *body, size_t len, struct sbx_error *e)
{
	const char *argv[SECRETS_REFS_MAX + 8] = { g_server.prog.secrets, "--data-dir", g_server.cfg.data_dir };
	int n = 3, in = body ? body_memfd(body, len) : -1;
	for (int i = 0; args[i] && n < SECRETS_REFS_MAX + 7; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (body && in < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "internal", "Cannot hand the request to sbx-secrets: %s", strerror(errno));
		return NULL;
	}
	struct sbx_spawn s = { .argv = argv, .stdin_fd = in, .die_with_parent = true };
	json_t *out = sbx_stage_call(&s, 0, SECRETS_OUTPUT_CAP, e);
	metrics_stage_call(g_server.prog.secrets, out != NULL, e);
	if (in >= 0) {
		/* The memfd held a value: emptied before it is let go. */
		if (ftruncate(in, 0) != 0)
			errno = 0; /* closed all the same */
		close(in);
	}
	return out;
}

enum MHD_Result handle_secrets(struct req *r, const char *name, const char *op)
{
	struct sbx_error e;
	if (r->too_large)
		return reply_error(r, 400, "Request body exceeds the %zu byte limit", request_body_limit(r));
	if (!auth_signature(&g_server.cfg, r))
		return reply_error(r, 401, "Invalid or expired secret signature");
	bool put = !strcmp(op, "put"), rotate = !strcmp(op, "rotate");
	const char *list[] = { "ls", NULL }, *put_args[] = { "put", name, "--json", "--replace", NULL },
		   *rotate_args[] = { "rotate", name, "--json", NULL }, *rm[] = { "rm", name, NULL };
	const char *const *args = put ? put_args : rotate ? rotate_args : !strcmp(op, "rm") ? rm : list;
	json_t *out = call(args, put || rotate ? (r->body ? r->body : "") : NULL, r->len, &e);
	if (r->body)
		OPENSSL_cleanse(r->body, r->len);
	if (!out) {
		unsigned status = !strcmp(e.code, "unknown-secret")                                     ? 404
				  : e.exit_code == SBX_EXIT_USAGE || e.exit_code == SBX_EXIT_POLICY ? 400
												    : 500;
		return reply_error(r, status, "%s", e.message);
	}
	/* A put that created the secret leaves it never rotated. */
	return reply_json(r, put && json_is_null(json_object_get(out, "rotatedAt")) ? 201 : 200, out);
}

int secrets_check(const json_t *network_policy_or_null, const json_t *refs_array, json_t **checked,
		  struct sbx_error *e)
{
	const char *args[SECRETS_REFS_MAX + 4] = { "check", "--policy", "-" };
	size_t i;
	json_t *ref;
	if (!json_is_array(refs_array) || json_array_size(refs_array) > SECRETS_REFS_MAX) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "secretRefs: an array of at most %d secret names", SECRETS_REFS_MAX);
		return -1;
	}
	json_array_foreach(refs_array, i, ref) {
		if (!json_is_string(ref) || !sbx_secret_name_ok(json_string_value(ref))) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "secretRefs[%zu]: must be a secret name (^[a-z0-9][a-z0-9_-]{0,62}$)", i);
			return -1;
		}
		args[3 + i] = json_string_value(ref);
	}
	args[3 + i] = NULL;
	char *policy = network_policy_or_null ? json_dumps(network_policy_or_null, JSON_COMPACT | JSON_ENCODE_ANY)
					      : strdup("\"none\"");
	if (!policy) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "secretRefs: out of memory");
		return -1;
	}
	*checked = call(args, policy, strlen(policy), e);
	free(policy);
	return *checked ? 0 : -1;
}
