/* request.c — an execution request of the API checked in runner-api 5.1's
 * order and turned into the sbx-run request (sbx-formats(5)); every
 * refusal is a 400 with the upstream's message. */
#include "request.h"
#include "workspace.h"
#include "../lib/exitcodes.h"
#include "../lib/egress_policy.h"
#include "../lib/npu_chips.h"
#include "../lib/remote_path.h"
#include "../lib/beneath.h"
#include "../lib/path.h"
#include "../lib/datadir.h"
#include "server.h"
#include "environments.h"
#include "skills_call.h"
#include "secrets_call.h"
#include "../lib/hash.h"
#include "../lib/run_request.h"

#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SKILLS_TAMPERED "skillPackagesRoot failed its integrity check; upload the package again"
#define SKILLS_NOT_HELD "skillPackagesRoot must be a skill package held by this runner"

static int fail(struct sbx_error *e, const char *fmt, const char *a)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", fmt, a);
	return -1;
}

static bool blank(const char *s)
{
	return !s || strspn(s, " \t\r\n") == strlen(s);
}

int request_workspace(json_t *doc, char *workspace, size_t size, struct sbx_error *e)
{
	const char *mode = json_string_value(json_object_get(doc, "kernelMode"));
	json_t *km = json_object_get(doc, "kernelMode");
	if ((km && !json_is_null(km) && !mode) || (mode && strcmp(mode, "ephemeral") != 0))
		return fail(e, "%s",
			    "Runner executions must be ephemeral; persistent runtimes are no longer supported. Use "
			    "managed Shell Execution for background tasks");
	/* A key names <data>/remote-workspaces/<key>, made on demand; the
	 * read-only parent does not apply to it (runner-api 5.1). */
	const json_t *key = json_object_get(doc, "runnerWorkspaceKey");
	if (key && !json_is_null(key)) {
		int fd = workspace_open_key(json_string_value(key), true, workspace, size, e);
		if (fd >= 0)
			json_object_del(doc, "readOnlyWorkspaceRoot");
		return fd;
	}
	const char *root = json_string_value(json_object_get(doc, "workspaceRoot"));
	if (blank(root))
		return fail(e, "%s", "workspaceRoot is required");
	if (root[0] != '/')
		return fail(e, "%s", "workspaceRoot must be an absolute path");
	return workspace_open_root(root, workspace, size, e);
}

/* fd becomes sbx-run's fd 3 + n: "fd:N" in the request it reads. */
static const char *hand_on(struct api_exec *x, int fd, char *ref, size_t size)
{
	if (x->n_fds == sizeof(x->fds) / sizeof(x->fds[0]))
		abort(); /* the workspace, its parent, a prefix and a package: never more */
	x->fds[x->n_fds] = fd;
	snprintf(ref, size, "fd:%d", 3 + (int)x->n_fds++);
	return ref;
}

void api_exec_close(struct api_exec *x)
{
	for (size_t i = 0; i < x->n_fds; i++)
		if (x->fds[i] >= 0)
			close(x->fds[i]);
	x->n_fds = 0;
}

static int limit(json_t *doc, const char *key, long long dflt, long long *out, struct sbx_error *e)
{
	json_t *v = json_object_get(doc, key);
	if (!v || json_is_null(v)) {
		*out = dflt;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 9007199254740991LL)
		return fail(e, "%s must be a non-negative safe integer", key);
	*out = json_integer_value(v);
	return 0;
}

/* skillPackagesRoot: a package this runner holds (sbx-skills verified
 * it against its id, on the fd sbx-run binds), read-only at /skills; the workspace's
 * .sciencediscovery/skill-extensions (made below the workspace fd without
 * following a symlink) writable at /skill-extensions. */
static int build(json_t *doc, bool shell, const char *workspace, int ws_fd, struct api_exec *x, json_t **run_out,
		 struct sbx_error *e);

static int skills(const json_t *doc, struct api_exec *x, json_t *run, struct sbx_error *e)
{
	const char *root = json_string_value(json_object_get(doc, "skillPackagesRoot"));
	char ref[32];
	if (blank(root))
		return 0;
	char id[65];
	int pkg = skills_open_held(root, id);
	if (pkg < 0)
		return fail(e, "%s", pkg == -2 ? SKILLS_TAMPERED : SKILLS_NOT_HELD);
	const char *leaf;
	int parent = sbx_beneath_parent(x->fds[0], ".sciencediscovery/skill-extensions/x", true, &leaf);
	if (parent < 0) {
		close(pkg);
		return fail(e, "%s", "Remote workspace path must not contain symbolic links");
	}
	close(parent);
	memcpy(x->skill_package, id, sizeof(x->skill_package));
	x->skill_slot = x->n_fds;
	json_object_set_new(run, "skills", json_pack("{s:s,s:s}", "root", hand_on(x, pkg, ref, sizeof(ref)), "extensions",
						     ".sciencediscovery/skill-extensions"));
	return 0;
}

int request_skills_recheck(const struct api_exec *x, struct sbx_error *e)
{
	int rc = x->skill_package[0] ? skills_verify_fd(x->fds[x->skill_slot], x->skill_package) : 0;
	return rc == 0 ? 0 : fail(e, "%s", rc == -2 ? SKILLS_TAMPERED : SKILLS_NOT_HELD);
}

/* npuDevices (host indices): sbx-run re-probes them right before the
 * launch and refuses the execution by name when one is not usable. */
static int npu_devices(const json_t *doc, json_t *run, struct sbx_error *e)
{
	const json_t *chips = json_object_get(doc, "npuDevices");
	int list[SBX_NPU_MAX_CHIPS];
	if (!chips || json_is_null(chips))
		return 0;
	int n = sbx_npu_chip_list(chips, "npuDevices", list, e);
	if (n < 0)
		return -1;
	if (n > 0)
		json_object_set_new(run, "devices", json_pack("{s:s,s:O}", "vendor", "ascend", "chips", chips));
	return 0;
}

/* True for a resolved outbound route that dials the pinned address itself:
 * absent, null, or an object whose kind (and mode and type, where given)
 * is "direct" and which names no proxy. Anything else is a route sbx
 * cannot take. */
static bool route_is_direct(const json_t *proxy)
{
	static const char *const keys[] = { "kind", "mode", "type" };
	if (!proxy || json_is_null(proxy))
		return true;
	if (!json_is_object(proxy))
		return false;
	bool direct = false;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const json_t *v = json_object_get(proxy, keys[i]);
		if (!v)
			continue;
		if (!json_is_string(v) || strcmp(json_string_value(v), "direct") != 0)
			return false;
		direct = true;
	}
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)proxy, key, v)
		if (!json_is_null(v) && (strcasestr(key, "url") || strcasestr(key, "proxy") || strcasestr(key, "host")))
			return false;
	return direct;
}

/* The epoch's network: domain-allowlist only when networkAccess agrees.
 * What would change where traffic goes and sbx cannot honour (the `open`
 * mode, a per-execution outbound proxy) is refused, never ignored. */
static int network(const json_t *doc, json_t *epoch, struct api_exec *x, json_t *run, struct sbx_error *e)
{
	const char *policy = json_string_value(json_object_get(epoch, "networkPolicy"));
	json_t *access = json_object_get(epoch, "networkAccess");
	const char *mode = json_string_value(json_object_get(access, "mode"));
	x->network_policy = "none";
	snprintf(x->network_revision, sizeof(x->network_revision), "none");
	if (policy && !strcmp(policy, "open"))
		return fail(e, "%s",
			    "permissionEpoch.networkPolicy \"open\" is not supported by this runner; grant "
			    "domain-allowlist access instead");
	if (!policy || strcmp(policy, "domain-allowlist") != 0 || !mode || strcmp(mode, policy) != 0)
		return 0;
	if (!route_is_direct(json_object_get(doc, "sandboxEgressProxy")))
		return fail(e, "%s",
			    "sandboxEgressProxy: this runner's egress gateway connects directly; a per-execution "
			    "outbound proxy is refused, never ignored");
	if (!g_server.network_available)
		return fail(e, "%s", g_server.network_reason);
	const json_t *revision = json_object_get(access, "revision");
	const char *given = json_string_value(revision);
	if (revision && !json_is_null(revision) && !given)
		return fail(e, "%s", "networkAccess.revision must be a string");
	if (given && strlen(given) >= sizeof(x->network_revision))
		return fail(e, "%s", "networkAccess.revision is longer than 128 bytes");
	json_t *net = json_pack("{s:s,s:O,s:b}", "mode", "domain-allowlist", "allowedDomains",
				json_object_get(access, "allowedDomains") ? json_object_get(access, "allowedDomains")
									   : json_null(),
				"allowPrivateNetwork", json_is_true(json_object_get(access, "allowPrivateNetwork")));
	struct sbx_egress_policy p;
	struct sbx_error pe;
	if (!net || sbx_egress_policy_parse(net, &p, &pe) != 0) {
		json_decref(net);
		return fail(e, "networkAccess: %s", net ? pe.message : "allowedDomains is required");
	}
	/* The epoch's own revision is the one the API knows it by: echoed when
	 * it carries one, sbx's content hash of the policy otherwise. */
	snprintf(x->network_revision, sizeof(x->network_revision), "%s", given && *given ? given : p.revision);
	x->network_revision_given = given && *given;
	sbx_egress_policy_free(&p);
	x->network_policy = "domain-allowlist";
	json_object_set_new(run, "network", net);
	return 0;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* An array of strings, sorted in place. */
static void qsort_names(json_t *names)
{
	size_t n = json_array_size(names);
	json_t **v = n ? calloc(n, sizeof(*v)) : NULL;
	for (size_t i = 0; v && i < n; i++)
		v[i] = json_incref(json_array_get(names, i));
	if (!v)
		return;
	qsort(v, n, sizeof(*v), by_text);
	json_array_clear(names);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(names, v[i]);
	free(v);
}

/* permissionEpoch.secretRefs: the runner's secrets the workload may use,
 * as placeholders, only through the gateway and only to each secret's
 * hosts, which the epoch's allowlist must cover. They make a new epoch:
 * sbx's revision of the policy covers them. */
static int secret_refs(json_t *epoch, struct api_exec *x, json_t *run, struct sbx_error *e)
{
	json_t *refs = json_object_get(epoch, "secretRefs");
	if (!refs || json_is_null(refs))
		return 0;
	if (!json_is_array(refs))
		return fail(e, "%s", "permissionEpoch.secretRefs must be an array of secret names");
	if (!json_array_size(refs))
		return 0;
	if (json_array_size(refs) > SBX_RUN_MAX_SECRETS)
		return fail(e, "%s", "permissionEpoch.secretRefs: at most 32 secrets");
	for (size_t i = 0; i < json_array_size(refs); i++)
		if (!json_is_string(json_array_get(refs, i)))
			return fail(e, "%s", "permissionEpoch.secretRefs: every entry must be a secret name (a string)");
	json_t *net = json_object_get(run, "network"), *checked = NULL;
	if (!net)
		return fail(e, "%s",
			    "permissionEpoch.secretRefs: a secret is sent only through the domain-allowlist gateway; "
			    "grant networkPolicy domain-allowlist with the secrets' hosts");
	struct sbx_error ce;
	if (secrets_check(net, refs, &checked, &ce) != 0)
		return fail(e, "permissionEpoch.secretRefs: %s", ce.message);
	json_decref(checked);
	json_object_set(run, "secretRefs", refs);
	if (!x->network_revision_given) {
		/* The allowlist's revision and the sorted names, hashed again. */
		json_t *names = json_deep_copy(refs), *all;
		qsort_names(names);
		all = json_pack("[s,O]", x->network_revision, names);
		char *text = all ? json_dumps(all, JSON_COMPACT) : NULL, hex[65];
		if (text) {
			sbx_sha256_hex(text, strlen(text), hex);
			snprintf(x->network_revision, sizeof(x->network_revision), "%.16s", hex);
		}
		free(text);
		json_decref(all);
		json_decref(names);
	}
	return 0;
}

int request_build(json_t *doc, bool shell, const char *workspace, int ws_fd, struct api_exec *x, json_t **run_out,
		  struct sbx_error *e)
{
	int rc = build(doc, shell, workspace, ws_fd, x, run_out, e);
	if (rc != 0)
		api_exec_close(x);
	return rc;
}

static int build(json_t *doc, bool shell, const char *workspace, int ws_fd, struct api_exec *x, json_t **run_out,
		 struct sbx_error *e)
{
	json_t *epoch = json_object_get(doc, "permissionEpoch");
	const char *lang = shell ? "shell" : json_string_value(json_object_get(doc, "language"));
	const char *code = json_string_value(json_object_get(doc, "code"));
	const char *id = json_string_value(json_object_get(doc, "executionId"));
	const char *agent = json_string_value(json_object_get(doc, "agentId"));
	const char *session = json_string_value(json_object_get(epoch, "sessionId"));
	long long timeout, max_out, max_ws, max_files;

	*run_out = NULL;
	memset(x, 0, sizeof(*x));
	struct stat ws_st;
	char ref[32];
	const char *ws_ref = hand_on(x, ws_fd, ref, sizeof(ref));
	if (fstat(ws_fd, &ws_st) != 0)
		return fail(e, "%s", "workspaceRoot cannot be read");
	x->ws_dev = (unsigned long long)ws_st.st_dev;
	x->ws_ino = (unsigned long long)ws_st.st_ino;
	lang = lang ? lang : "python";
	if (strcmp(lang, "python") != 0 && strcmp(lang, "r") != 0 && strcmp(lang, "shell") != 0)
		return fail(e, "Unsupported language: %.40s", lang);
	snprintf(x->language, sizeof(x->language), "%s", lang);
	if (!json_is_object(epoch))
		return fail(e, "%s", "permissionEpoch is required");
	if (blank(session) || strlen(session) >= sizeof(x->session))
		return fail(e, "%s", "permissionEpoch.sessionId is required");
	if (blank(agent) || strlen(agent) >= sizeof(x->agent))
		return fail(e, "%s", "agentId is required");
	if (blank(id) || strlen(id) >= sizeof(x->id))
		return fail(e, "%s", "Execution ID is required");
	if (blank(code))
		return fail(e, "%s code is required", shell ? "Shell" : !strcmp(lang, "r") ? "R" : "Python");
	json_t *mounts = json_object_get(epoch, "mounts");
	const char *src = json_string_value(json_object_get(json_array_get(mounts, 0), "source"));
	const char *mode = json_string_value(json_object_get(json_array_get(mounts, 0), "mode"));
	if (json_array_size(mounts) != 1 || !src || strcmp(src, "workspace") || !mode || strcmp(mode, "read-write"))
		return fail(e, "%s",
			    shell ? "Shell execution accepts exactly one read-write workspace mount"
				  : "M1 runner accepts exactly one read-write workspace mount");
	const char *named = json_string_value(json_object_get(doc, "environmentRevisionId"));
	const char *epoch_rev = json_string_value(json_object_get(epoch, "environmentRevisionId"));
	const char *env_id = shell ? json_string_value(json_object_get(doc, "environmentId")) : NULL;
	json_t *cap = environments_capability();
	bool envs = json_is_true(json_object_get(cap, "available"));
	json_decref(cap);
	char prefix[PATH_MAX] = "", runtime_rev[128] = "";
	if (!envs && !strcmp(lang, "r"))
		return fail(e, "%s", "R execution requires the scientific environment capability");
	if (!envs && !shell && named && (!epoch_rev || strcmp(named, epoch_rev) != 0))
		return fail(e, "%s", "Named environment execution requires the scientific environment capability");
	if (!envs && env_id)
		return fail(e, "%s", "Scientific environments are unavailable");
	/* With environments: the runtime of the named revision (or the
	 * language's starter), or of the shell's environment. */
	if (envs && (!shell || env_id) &&
	    environments_resolve(env_id ? "--environment" : "--revision", env_id ? env_id : named, shell ? "python" : lang,
				 prefix, sizeof(prefix), runtime_rev, sizeof(runtime_rev), x->env_id, sizeof(x->env_id), e) != 0)
		return -1;
	if (limit(doc, "executionTimeoutMs", g_server.cfg.exec_timeout_ms, &timeout, e) != 0 ||
	    limit(doc, "maxOutputBytes", g_server.cfg.max_output_bytes, &max_out, e) != 0 ||
	    limit(doc, "maxWorkspaceBytes", g_server.cfg.max_workspace_bytes, &max_ws, e) != 0 ||
	    limit(doc, "maxWorkspaceFiles", g_server.cfg.max_workspace_files, &max_files, e) != 0)
		return -1;
	snprintf(x->id, sizeof(x->id), "%s", id);
	snprintf(x->session, sizeof(x->session), "%s", session);
	snprintf(x->agent, sizeof(x->agent), "%s", agent);
	snprintf(x->workspace, sizeof(x->workspace), "%s", workspace);
	snprintf(x->env_revision, sizeof(x->env_revision), "%s",
		 runtime_rev[0] ? runtime_rev : shell ? "system-shell-bwrap-v1" : named ? named : epoch_rev ? epoch_rev : "system-python");
	x->timeout_ms = timeout;

	json_t *run = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I}", "language", lang, "code", code, "workspace", ws_ref,
				"timeoutMs", (json_int_t)timeout, "maxOutputBytes", (json_int_t)max_out,
				"maxWorkspaceBytes", (json_int_t)max_ws, "maxWorkspaceFiles", (json_int_t)max_files);
	/* sbx's extension: a speculative run (sbx-run checks keepSeconds). */
	json_t *speculative = json_object_get(doc, "speculative");
	if (speculative && !json_is_null(speculative) && !json_is_boolean(speculative) && !json_is_object(speculative)) {
		json_decref(run);
		return fail(e, "%s", "speculative: must be true, false or {\"keepSeconds\": N}");
	}
	if (json_is_true(speculative) || json_is_object(speculative))
		json_object_set(run, "speculative", speculative);
	if (prefix[0]) {
		/* The prefix sbx-env resolved, opened once here and handed on. */
		int env_fd = open(prefix, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (env_fd < 0) {
			json_decref(run);
			return fail(e, "%s", "The environment prefix cannot be opened");
		}
		json_object_set_new(run, "environment", json_pack("{s:s}", "prefix", hand_on(x, env_fd, ref, sizeof(ref))));
	}
	const char *ro = json_string_value(json_object_get(doc, "readOnlyWorkspaceRoot"));
	if (ro && *ro) {
		char shown[PATH_MAX];
		int ro_fd = workspace_open_root(ro, shown, sizeof(shown), e);
		if (ro_fd < 0) {
			json_decref(run);
			return -1;
		}
		json_object_set_new(run, "readOnlyWorkspace", json_string(hand_on(x, ro_fd, ref, sizeof(ref))));
	}
	const char *cwd = shell ? json_string_value(json_object_get(doc, "cwd")) : NULL;
	if (cwd && *cwd) {
		/* Checked below the workspace fd; sbx-launch opens it there again. */
		char plain[PATH_MAX];
		if (sbx_path_fold_slashes(cwd, plain, sizeof(plain)) != 0)
			plain[0] = '\0';
		int fd = cwd[0] == '/' ? -1 : sbx_open_beneath(ws_fd, plain, O_PATH | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
		if (fd < 0) {
			json_decref(run);
			return fail(e, "%s", "cwd must be a workspace-relative directory inside the workspace");
		}
		close(fd);
		if (plain[0] && strcmp(plain, "."))
			json_object_set_new(run, "cwd", json_string(plain));
	}
	if (network(doc, epoch, x, run, e) != 0 || secret_refs(epoch, x, run, e) != 0 || npu_devices(doc, run, e) != 0 ||
	    skills(doc, x, run, e) != 0) {
		json_decref(run);
		return -1;
	}
	*run_out = run;
	return 0;
}
