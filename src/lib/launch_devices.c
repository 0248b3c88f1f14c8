/* launch_devices.c — validating `devices`: nodes must be character devices
 * landing on a plain /dev name bwrap does not provide itself; read-only
 * paths canonical and clear of every mount the launch makes; environment
 * names limited to what accelerator user space reads. */
#include "launch_devices.h"
#include "exitcodes.h"
#include "json.h"
#include "launch_env.h"
#include "path.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct sbx_json_field fields[] = {
	{ "vendor", SBX_JSON_STRING, false, false },
	{ "hostIndices", SBX_JSON_ARRAY, false, false },
	{ "nodes", SBX_JSON_ARRAY, true, false },
	{ "readOnly", SBX_JSON_ARRAY, false, false },
	{ "env", SBX_JSON_OBJECT, false, false },
	{ "pathPrefix", SBX_JSON_STRING, false, false },
};
static const struct sbx_json_field node_fields[] = {
	{ "host", SBX_JSON_STRING, true, false },
	{ "sandbox", SBX_JSON_STRING, true, false },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* What bwrap's --dev makes, and what the launch mounts: never covered. */
static const char *const bwrap_dev[] = { "null", "zero", "full", "random", "urandom", "tty", "console", "ptmx",
					 "pts", "shm", "stdin", "stdout", "stderr", "fd", "core", "mqueue", NULL };
static const char *const launch_mounts[] = { "/proc", "/dev", "/tmp", "/workspace", "/parent_workspace",
					     "/scratch", "/run/sbx", "/opt/science-env", "/etc/passwd",
					     "/etc/group", NULL };
static const char *const env_names[] = { "LD_LIBRARY_PATH", "PYTHONPATH", "TOOLCHAIN_HOME", NULL };

static int fail(struct sbx_error *e, const char *field, size_t i, const char *what)
{
	sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "devices.%s[%zu]: %s", field, i, what);
	return -1;
}

static bool plain_dev_name(const char *name)
{
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || strlen(name) > 64 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != strlen(name))
		return false;
	for (size_t i = 0; bwrap_dev[i]; i++)
		if (!strcmp(name, bwrap_dev[i]))
			return false;
	return true;
}

static int parse_nodes(const json_t *nodes, struct sbx_launch_devices *d, struct sbx_error *e)
{
	size_t i;
	json_t *n;
	struct stat st;

	if (json_array_size(nodes) == 0 || json_array_size(nodes) > SBX_DEVICE_NODES_MAX)
		return fail(e, "nodes", 0, "must list 1 to 128 device nodes");
	json_array_foreach(nodes, i, n) {
		char where[48];
		snprintf(where, sizeof(where), "devices.nodes[%zu]", i);
		if (sbx_json_validate(n, node_fields, COUNT(node_fields), where, e) != 0)
			return -1;
		const char *host = json_string_value(json_object_get(n, "host"));
		const char *sandbox = json_string_value(json_object_get(n, "sandbox"));
		if (host[0] != '/' || stat(host, &st) != 0 || !S_ISCHR(st.st_mode))
			return fail(e, "nodes", i, "host: must be an absolute path to a character device");
		if (strncmp(sandbox, "/dev/", 5) != 0 || !plain_dev_name(sandbox + 5))
			return fail(e, "nodes", i, "sandbox: must be /dev/<name>, a name bwrap's /dev does not have");
		for (size_t k = 0; k < d->node_sandbox.len; k++)
			if (!strcmp(d->node_sandbox.items[k], sandbox))
				return fail(e, "nodes", i, "sandbox: bound twice");
		sbx_strvec_push(&d->node_hosts, host);
		sbx_strvec_push(&d->node_sandbox, sandbox);
	}
	return 0;
}

int sbx_launch_read_only_paths(const json_t *paths, const char *field, struct sbx_strvec *out, struct sbx_error *e)
{
	size_t i;
	json_t *p;

	if (!paths || json_is_null(paths))
		return 0;
	if (!json_is_array(paths) || json_array_size(paths) > SBX_DEVICE_PATHS_MAX) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "%s: an array of at most 64 paths", field);
		return -1;
	}
	json_array_foreach(paths, i, p) {
		const char *path = json_string_value(p), *why = NULL;
		/* Canonical by its text here; by the open (sbx-launch/host.c, no
		 * symlink followed) at the one moment that counts. */
		if (!path)
			why = "must be a string";
		else if (path[0] != '/' || !sbx_path_plain_relative(path + 1))
			why = "must be an absolute path without '.', '..' or empty segments";
		/* Below /tmp is fine: these binds come after its tmpfs. */
		for (size_t k = 0; !why && launch_mounts[k]; k++)
			if ((strcmp(launch_mounts[k], "/tmp") != 0 && sbx_path_is_within(launch_mounts[k], path)) ||
			    sbx_path_is_within(path, launch_mounts[k]))
				why = "overlaps a mount the launch makes itself";
		if (why) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "%s[%zu]: %s", field, i, why);
			return -1;
		}
		sbx_strvec_push(out, path);
	}
	return 0;
}

static int parse_env(const json_t *env, struct sbx_launch_devices *d, struct sbx_error *e)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)env, key, v) {
		bool allowed = !strncmp(key, "ASCEND_", 7) && strlen(key) <= 64 &&
			       strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == strlen(key);
		for (size_t i = 0; env_names[i]; i++)
			allowed = allowed || !strcmp(key, env_names[i]);
		if (!allowed) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field",
				      "devices.env.%.64s: only ASCEND_*, LD_LIBRARY_PATH, PYTHONPATH and TOOLCHAIN_HOME", key);
			return -1;
		}
		if (!json_is_string(v) || json_string_length(v) > SBX_ENV_VALUE_MAX) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "devices.env.%s: must be a string of at most 32 KiB", key);
			return -1;
		}
		sbx_strvec_push(&d->env_keys, key);
		sbx_strvec_push(&d->env_values, json_string_value(v));
	}
	return 0;
}

int sbx_launch_devices_parse(const json_t *doc, struct sbx_launch_devices *d, struct sbx_error *e)
{
	memset(d, 0, sizeof(*d));
	sbx_strvec_init(&d->node_hosts);
	sbx_strvec_init(&d->node_sandbox);
	sbx_strvec_init(&d->read_only);
	sbx_strvec_init(&d->env_keys);
	sbx_strvec_init(&d->env_values);
	if (!doc || json_is_null(doc))
		return 0;
	d->present = true;
	if (sbx_json_validate(doc, fields, COUNT(fields), "devices", e) != 0 ||
	    parse_nodes(json_object_get(doc, "nodes"), d, e) != 0 ||
	    sbx_launch_read_only_paths(json_object_get(doc, "readOnly"), "devices.readOnly", &d->read_only, e) != 0 ||
	    parse_env(json_object_get(doc, "env"), d, e) != 0)
		return -1;
	const char *prefix = sbx_json_string_or(doc, "pathPrefix", NULL);
	if (prefix) {
		if (prefix[0] != '/' || strchr(prefix, ':') || strlen(prefix) > 1024) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-field", "devices.pathPrefix: an absolute directory without ':'");
			return -1;
		}
		d->path_prefix = strdup(prefix);
	}
	if (d->node_hosts.failed || d->node_sandbox.failed || d->read_only.failed || d->env_keys.failed ||
	    d->env_values.failed || (prefix && !d->path_prefix)) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "devices");
		return -1;
	}
	return 0;
}

void sbx_launch_devices_free(struct sbx_launch_devices *d)
{
	sbx_strvec_free(&d->node_hosts);
	sbx_strvec_free(&d->node_sandbox);
	sbx_strvec_free(&d->read_only);
	sbx_strvec_free(&d->env_keys);
	sbx_strvec_free(&d->env_values);
	free(d->path_prefix);
	memset(d, 0, sizeof(*d));
}
