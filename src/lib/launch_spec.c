/* launch_spec.c — the launch spec's schema table and its validation. */
#include "launch_spec.h"
#include "exitcodes.h"
#include "json.h"
#include "beneath.h"
#include "launch_env.h"
#include "path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARGV_MAX_ITEMS 4096
#define ARGV_MAX_BYTES (1u << 20)

static const struct sbx_json_field spec_fields[] = {
	{ "argv", SBX_JSON_ARRAY, true, false },
	{ "workspace", SBX_JSON_STRING, false, true },
	{ "readOnlyWorkspace", SBX_JSON_STRING, false, true },
	{ "cwd", SBX_JSON_STRING, false, true },
	{ "env", SBX_JSON_OBJECT, false, true },
	{ "network", SBX_JSON_OBJECT, false, true },
	{ "environment", SBX_JSON_OBJECT, false, true },
	{ "devices", SBX_JSON_ANY, false, true },
	{ "tmpSizeBytes", SBX_JSON_INTEGER, false, true },
	{ "shmSizeBytes", SBX_JSON_INTEGER, false, true },
	{ "fileSizeLimitBytes", SBX_JSON_INTEGER, false, true },
	{ "maxProcesses", SBX_JSON_INTEGER, false, true },
	{ "maxOpenFiles", SBX_JSON_INTEGER, false, true },
	{ "maxAddressSpaceBytes", SBX_JSON_INTEGER, false, true },
	{ "scratch", SBX_JSON_STRING, false, true },
	{ "skills", SBX_JSON_OBJECT, false, true },
	{ "readOnlyPaths", SBX_JSON_ARRAY, false, true },
	{ "workspaceOverlay", SBX_JSON_STRING, false, true },
};
static const struct sbx_json_field skills_fields[] = {
	{ "root", SBX_JSON_STRING, true, false },
	{ "extensions", SBX_JSON_STRING, true, false },
};
static const struct sbx_json_field network_fields[] = {
	{ "mode", SBX_JSON_STRING, true, false },
	{ "socket", SBX_JSON_STRING, false, false },
	{ "caCertificate", SBX_JSON_STRING, false, false },
};
static const struct sbx_json_field environment_fields[] = {
	{ "prefix", SBX_JSON_STRING, true, false },
	{ "writable", SBX_JSON_BOOL, false, false },
	{ "mountPath", SBX_JSON_STRING, false, false },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int bad(struct sbx_error *e, const char *code, const char *field, const char *what)
{
	sbx_error_set(e, SBX_EXIT_USAGE, code, "%s: %s", field, what);
	return -1;
}

static int parse_argv(const json_t *argv, struct sbx_launch_spec *s, struct sbx_error *e)
{
	size_t i, total = 0;
	json_t *item;

	if (json_array_size(argv) == 0)
		return bad(e, "bad-field", "argv", "must be a non-empty array of strings");
	if (json_array_size(argv) > ARGV_MAX_ITEMS)
		return bad(e, "bad-field", "argv", "more than 4096 items");
	json_array_foreach(argv, i, item) {
		if (!json_is_string(item)) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "argv[%zu]: must be a string", i);
			return -1;
		}
		total += json_string_length(item) + 1;
		sbx_strvec_push(&s->argv, json_string_value(item));
	}
	if (json_string_length(json_array_get(argv, 0)) == 0)
		return bad(e, "bad-field", "argv[0]", "must not be empty");
	if (total > ARGV_MAX_BYTES)
		return bad(e, "bad-field", "argv", "larger than 1 MiB in total");
	return 0;
}

/* A host directory field: opened once into an fd (host_dir.h). */
static int host_dir(const char *value, const char *field, struct sbx_host_dir *d, struct sbx_error *e)
{
	return sbx_host_dir_open(value, field, d, e);
}

/* Where the workspace and its read-only parent appear (runner-api 5.1):
 * nested at /workspace/<rel> only when <rel>, opened below the parent's fd
 * without a symlink, is the very workspace the fd holds. */
static int place_workspace(struct sbx_launch_spec *s)
{
	const char *rel = NULL;
	if (s->ro_parent.fd >= 0 && sbx_path_is_within(s->ro_parent.path, s->workspace.path) &&
	    strcmp(s->ro_parent.path, s->workspace.path) != 0) {
		rel = s->workspace.path + strlen(s->ro_parent.path);
		while (*rel == '/')
			rel++;
		int fd = sbx_open_beneath(s->ro_parent.fd, rel, O_PATH | O_DIRECTORY, SBX_BENEATH_NO_SYMLINKS);
		if (fd < 0 || !sbx_same_file(fd, s->workspace.fd))
			rel = NULL; /* moved meanwhile, or behind a symlink: mounted apart */
		if (fd >= 0)
			close(fd);
	}
	if (rel) {
		s->parent_mount = strdup("/workspace");
		if (asprintf(&s->ws_mount, "/workspace/%s", rel) < 0)
			s->ws_mount = NULL;
	} else {
		s->ws_mount = strdup("/workspace");
		if (s->ro_parent.fd >= 0)
			s->parent_mount = strdup("/parent_workspace");
	}
	return s->ws_mount && (s->ro_parent.fd < 0 || s->parent_mount) ? 0 : -1;
}

static int parse_cwd(const json_t *cwd, struct sbx_launch_spec *s, struct sbx_error *e)
{
	const char *want = json_is_string(cwd) ? json_string_value(cwd) : NULL;

	if (s->workspace.fd < 0) {
		if (want)
			return bad(e, "bad-field", "cwd", "needs a workspace");
		s->cwd = strdup("/tmp");
		return s->cwd ? 0 : -1;
	}
	if (!want)
		want = s->ws_mount;
	/* No empty, "." or ".." segment: the path means what it says. */
	if (want[0] != '/' || !sbx_path_plain_relative(want + 1))
		return bad(e, "bad-path", "cwd", "must be an absolute sandbox path without '.', '..' or empty segments");
	if (!sbx_path_is_within(s->ws_mount, want)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "cwd: %.300s is not inside the workspace (%s)",
			      want, s->ws_mount);
		return -1;
	}
	const char *rel = want + strlen(s->ws_mount);
	while (*rel == '/')
		rel++;
	if (sbx_host_dir_beneath(&s->workspace, rel, "cwd", &s->cwd_dir, e) != 0)
		return -1;
	s->cwd = strdup(want);
	return s->cwd ? 0 : -1;
}

static int parse_env(const json_t *env, struct sbx_launch_spec *s, struct sbx_error *e)
{
	const char *key;
	json_t *value;
	size_t total = 0;

	json_object_foreach((json_t *)env, key, value) {
		if (sbx_env_name_allowed(key, e) != 0)
			return -1;
		if (!json_is_string(value)) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "env.%s: must be a string", key);
			return -1;
		}
		if (json_string_length(value) > SBX_ENV_VALUE_MAX) {
			sbx_error_set(e, SBX_EXIT_USAGE, "env-too-large", "env.%s: value larger than 32 KiB", key);
			return -1;
		}
		total += strlen(key) + json_string_length(value) + 2;
		if (total > SBX_ENV_TOTAL_MAX) {
			sbx_error_set(e, SBX_EXIT_USAGE, "env-too-large", "env.%s: env larger than 256 KiB in total", key);
			return -1;
		}
		sbx_strvec_push(&s->env_keys, key);
		sbx_strvec_push(&s->env_values, json_string_value(value));
	}
	return 0;
}

static int parse_network(const json_t *net, struct sbx_launch_spec *s, struct sbx_error *e)
{
	s->profile = SBX_SECCOMP_BASELINE;
	if (!net)
		return 0;
	if (sbx_json_validate(net, network_fields, COUNT(network_fields), "network", e) != 0)
		return -1;
	const char *mode = json_string_value(json_object_get(net, "mode"));
	const char *socket = sbx_json_string_or(net, "socket", NULL);
	if (strcmp(mode, "none") == 0)
		return socket ? bad(e, "bad-field", "network.socket", "only with mode \"domain-allowlist\"") : 0;
	if (strcmp(mode, "domain-allowlist") != 0)
		return bad(e, "bad-field", "network.mode", "must be \"none\" or \"domain-allowlist\"");
	/* The gateway's socket: the sandbox's only way out (sbx-egress(1)). */
	struct stat st;
	if (!socket || socket[0] != '/')
		return bad(e, "bad-field", "network.socket", "domain-allowlist needs the absolute path of an sbx-egress gateway socket");
	if (!(s->egress_socket = realpath(socket, NULL)) || stat(s->egress_socket, &st) != 0 || !S_ISSOCK(st.st_mode)) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-path", "network.socket: %.300s: not a socket (is the gateway running?)",
			      socket);
		return -1;
	}
	/* The gateway's per-run CA (a secret's hosts are intercepted): added
	 * to the bundle the sandbox trusts. */
	const char *ca = sbx_json_string_or(net, "caCertificate", NULL);
	if (ca && ca[0] != '/')
		return bad(e, "bad-field", "network.caCertificate", "must be the absolute path of a PEM certificate");
	if (ca && !(s->egress_ca = strdup(ca)))
		return bad(e, "no-memory", "network.caCertificate", "out of memory");
	s->profile = SBX_SECCOMP_NETWORK;
	return 0;
}

static int parse_environment(const json_t *env, struct sbx_launch_spec *s, struct sbx_error *e)
{
	if (!env)
		return 0;
	if (sbx_json_validate(env, environment_fields, COUNT(environment_fields), "environment", e) != 0)
		return -1;
	/* writable: an installer's target, bound read-write at mountPath (its
	 * own path by default) and nowhere else; host interpreters stay. */
	s->env_writable = json_is_true(json_object_get(env, "writable"));
	const char *at = json_string_value(json_object_get(env, "mountPath"));
	if (at && !s->env_writable)
		return bad(e, "bad-field", "environment.mountPath", "only with writable: true");
	if (at && (at[0] != '/' || !sbx_path_plain_relative(at + 1) || strlen(at) >= PATH_MAX))
		return bad(e, "bad-path", "environment.mountPath", "must be an absolute path without '.', '..' or empty segments");
	for (const char *const *m = (const char *const[]){ "/usr", "/proc", "/dev", "/tmp", "/workspace", "/scratch",
						     "/run", "/etc", "/skills", "/opt/science-env", NULL };
	     at && *m; m++)
		if (sbx_path_is_within(*m, at) || sbx_path_is_within(at, *m))
			return bad(e, "bad-path", "environment.mountPath", "overlaps a mount the launch makes itself");
	if (at && !(s->env_mount = strdup(at)))
		return bad(e, "out-of-memory", "environment.mountPath", "no memory");
	return host_dir(json_string_value(json_object_get(env, "prefix")), "environment.prefix", &s->env_prefix, e);
}

/* A skill package read-only at /skills, and its writable extensions, a
 * directory of the workspace, at /skill-extensions. */
static int parse_skills(const json_t *skills, struct sbx_launch_spec *s, struct sbx_error *e)
{
	if (!skills)
		return 0;
	if (sbx_json_validate(skills, skills_fields, COUNT(skills_fields), "skills", e) != 0)
		return -1;
	if (s->workspace.fd < 0)
		return bad(e, "bad-field", "skills", "needs a workspace");
	const char *ext = json_string_value(json_object_get(skills, "extensions"));
	if (!sbx_path_plain_relative(ext))
		return bad(e, "bad-path", "skills.extensions",
			   "must be a workspace-relative directory without '.', '..' or empty segments");
	if (host_dir(json_string_value(json_object_get(skills, "root")), "skills.root", &s->skills_root, e) != 0 ||
	    sbx_host_dir_beneath(&s->workspace, ext, "skills.extensions", &s->skills_ext, e) != 0)
		return -1;
	if (!(s->skills_ext_rel = strdup(ext)))
		return bad(e, "out-of-memory", "skills.extensions", "no memory");
	return 0;
}

static const json_t *present(const json_t *doc, const char *key)
{
	const json_t *v = json_object_get(doc, key);
	return json_is_null(v) ? NULL : v;
}

int sbx_launch_spec_parse(const json_t *doc, struct sbx_launch_spec *s, struct sbx_error *e)
{
	const json_t *v;

	memset(s, 0, sizeof(*s));
	s->workspace = s->ro_parent = s->cwd_dir = s->env_prefix = SBX_HOST_DIR_NONE;
	s->scratch = s->skills_root = s->skills_ext = s->overlay = SBX_HOST_DIR_NONE;
	sbx_strvec_init(&s->argv);
	sbx_strvec_init(&s->env_keys);
	sbx_strvec_init(&s->env_values);
	sbx_strvec_init(&s->read_only);
	s->tmp_size = SBX_TMP_SIZE_DEFAULT;
	s->shm_size = SBX_SHM_SIZE_DEFAULT;
	s->file_size_limit = -1;
	s->max_processes = SBX_MAX_PROCESSES_DEFAULT;
	s->max_open_files = SBX_MAX_OPEN_FILES_DEFAULT;

	if (sbx_json_validate(doc, spec_fields, COUNT(spec_fields), "", e) != 0 ||
	    parse_argv(json_object_get(doc, "argv"), s, e) != 0)
		return -1;
	if (sbx_launch_devices_parse(present(doc, "devices"), &s->devices, e) != 0)
		return -1;
	if ((v = present(doc, "workspace")) && host_dir(json_string_value(v), "workspace", &s->workspace, e) != 0)
		return -1;
	if ((v = present(doc, "readOnlyWorkspace"))) {
		if (s->workspace.fd < 0)
			return bad(e, "bad-field", "readOnlyWorkspace", "needs a workspace");
		if (host_dir(json_string_value(v), "readOnlyWorkspace", &s->ro_parent, e) != 0)
			return -1;
	}
	if (s->workspace.fd >= 0 && place_workspace(s) != 0)
		return bad(e, "internal", "workspace", "out of memory");
	if (parse_cwd(present(doc, "cwd"), s, e) != 0 ||
	    ((v = present(doc, "env")) && parse_env(v, s, e) != 0) ||
	    parse_network(present(doc, "network"), s, e) != 0 ||
	    parse_environment(present(doc, "environment"), s, e) != 0)
		return -1;
	/* Chips with no network: sockets allowed, still no route (sandbox.md 3.3). */
	if (s->devices.present && s->profile == SBX_SECCOMP_BASELINE)
		s->profile = SBX_SECCOMP_NPU;
	if ((v = present(doc, "scratch")) && host_dir(json_string_value(v), "scratch", &s->scratch, e) != 0)
		return -1;
	if ((v = present(doc, "workspaceOverlay"))) {
		if (s->workspace.fd < 0)
			return bad(e, "bad-field", "workspaceOverlay", "needs a workspace");
		if (host_dir(json_string_value(v), "workspaceOverlay", &s->overlay, e) != 0)
			return -1;
	}
	if (parse_skills(present(doc, "skills"), s, e) != 0 ||
	    sbx_launch_read_only_paths(present(doc, "readOnlyPaths"), "readOnlyPaths", &s->read_only, e) != 0)
		return -1;
	if ((v = present(doc, "tmpSizeBytes"))) {
		s->tmp_size = json_integer_value(v);
		if (s->tmp_size < SBX_TMP_SIZE_MIN || s->tmp_size > SBX_TMP_SIZE_MAX)
			return bad(e, "bad-field", "tmpSizeBytes", "must be from 1 MiB (1048576) to 1 TiB");
	}
	if ((v = present(doc, "shmSizeBytes"))) {
		s->shm_size = json_integer_value(v);
		if (s->shm_size < SBX_TMP_SIZE_MIN || s->shm_size > SBX_TMP_SIZE_MAX)
			return bad(e, "bad-field", "shmSizeBytes", "must be from 1 MiB (1048576) to 1 TiB");
	}
	if ((v = present(doc, "fileSizeLimitBytes")) && (s->file_size_limit = json_integer_value(v)) < 0)
		return bad(e, "bad-field", "fileSizeLimitBytes", "must not be negative");
	if ((v = present(doc, "maxProcesses")) &&
	    ((s->max_processes = json_integer_value(v)) < 0 || (s->max_processes > 0 && s->max_processes < 16)))
		return bad(e, "bad-field", "maxProcesses", "must be 0 (no cap) or at least 16");
	if ((v = present(doc, "maxOpenFiles")) &&
	    ((s->max_open_files = json_integer_value(v)) < 0 || (s->max_open_files > 0 && s->max_open_files < 64)))
		return bad(e, "bad-field", "maxOpenFiles", "must be 0 (no cap) or at least 64");
	if ((v = present(doc, "maxAddressSpaceBytes")) &&
	    ((s->max_address_space = json_integer_value(v)) < 0 ||
	     (s->max_address_space > 0 && s->max_address_space < SBX_ADDRESS_SPACE_MIN)))
		return bad(e, "bad-field", "maxAddressSpaceBytes", "must be 0 (no cap) or at least 256 MiB (268435456)");
	if (s->argv.failed || s->env_keys.failed || s->env_values.failed)
		return bad(e, "internal", "spec", "out of memory");
	return 0;
}

void sbx_launch_spec_free(struct sbx_launch_spec *s)
{
	sbx_strvec_free(&s->argv);
	sbx_strvec_free(&s->env_keys);
	sbx_strvec_free(&s->env_values);
	sbx_strvec_free(&s->read_only);
	free(s->env_mount);
	sbx_host_dir_close(&s->workspace);
	sbx_host_dir_close(&s->ro_parent);
	free(s->ws_mount);
	free(s->parent_mount);
	free(s->cwd);
	sbx_host_dir_close(&s->cwd_dir);
	sbx_host_dir_close(&s->env_prefix);
	sbx_host_dir_close(&s->scratch);
	sbx_host_dir_close(&s->skills_root);
	sbx_host_dir_close(&s->skills_ext);
	free(s->skills_ext_rel);
	sbx_host_dir_close(&s->overlay);
	free(s->egress_socket);
	free(s->egress_ca);
	sbx_launch_devices_free(&s->devices);
	memset(s, 0, sizeof(*s));
	s->workspace = s->ro_parent = s->cwd_dir = s->env_prefix = SBX_HOST_DIR_NONE;
	s->scratch = s->skills_root = s->skills_ext = s->overlay = SBX_HOST_DIR_NONE;
}
