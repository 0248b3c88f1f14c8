/* install_box.c — the install sandbox (env.h): sbx-launch as the install
 * user with the target prefix read-write by fd, the rest read-only or
 * absent, the network only through an sbx-egress gateway to the hosts the
 * call names. Package code (post-link scripts, setup.py, .pth files, R's
 * configure) therefore never runs on the host or as root. */
#include "env.h"
#include "../lib/program_path.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/run_as.h"
#include "../lib/spawn.h"
#include "../lib/tree_remove.h"
#include "../lib/uuid.h"
#include "../lib/workspace_owner.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GATEWAY_READY_MS 10000
#define PASS_ENV_MAX 32

static int box_fail(struct sbx_error *e, const char *what, const char *detail)
{
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "install-sandbox", "The install sandbox cannot be prepared: %s%s%.600s", what,
		      detail ? ": " : "", detail ? detail : "");
	return -1;
}

static const char *arg_after(const char *const *argv, const char *flag)
{
	for (int i = 0; argv[i] && argv[i + 1]; i++)
		if (!strcmp(argv[i], flag))
			return argv[i + 1];
	return NULL;
}

static bool has_arg(const char *const *argv, const char *flag)
{
	for (int i = 0; argv[i]; i++)
		if (!strcmp(argv[i], flag))
			return true;
	return false;
}

/* The prefix a call changes: micromamba's --prefix, else the prefix whose
 * bin/ holds argv[0] (pip, R, an inventory); "" for neither. */
static void target_prefix(const struct envctx *c, const char *const *argv, char *out, size_t size)
{
	const char *p = arg_after(argv, "--prefix");
	char revisions[PATH_MAX + 16];
	snprintf(revisions, sizeof(revisions), "%s/revisions/", c->root);
	out[0] = '\0';
	if (p) {
		snprintf(out, size, "%s", p);
	} else if (!strncmp(argv[0], revisions, strlen(revisions))) {
		snprintf(out, size, "%s", argv[0]);
		for (int up = 0; up < 2; up++) {
			char *slash = strrchr(out, '/');
			if (slash)
				*slash = '\0';
		}
	}
}

/* Adds a canonical path once (an absent one is skipped: a stale cache). */
static void add_read_only(json_t *list, const char *path)
{
	char *real = path && *path == '/' ? realpath(path, NULL) : NULL;
	size_t i;
	json_t *v;
	json_array_foreach(list, i, v) if (real && !strcmp(json_string_value(v), real))
	{
		free(real);
		return;
	}
	if (real)
		json_array_append_new(list, json_string(real));
	free(real);
}

/* host[:port] of an https URL, else NULL (a local path or file:// URL). */
static void add_url_host(json_t *hosts, const char *url)
{
	const char *p = !strncmp(url, "https://", 8) ? url + 8 : !strncmp(url, "http://", 7) ? url + 7 : NULL;
	if (!p)
		return;
	size_t n = strcspn(p, "/?#");
	const char *at = memchr(p, '@', n);
	if (at) {
		n -= (size_t)(at + 1 - p);
		p = at + 1;
	}
	char host[256];
	snprintf(host, sizeof(host), "%.*s", (int)(n < 255 ? n : 255), p);
	char *colon = strrchr(host, ':');
	if (colon && !strchr(host, ']'))
		*colon = '\0';
	if (*host)
		json_array_append_new(hosts, json_string(host));
}

/* The hosts a call may reach: conda's channels (a plain name is
 * conda.anaconda.org's), pip's index, R's repositories; none offline. */
static json_t *call_hosts(const struct envctx *c, const char *const *argv, json_t *read_only)
{
	json_t *hosts = json_array();
	if (!argv[0])
		return hosts;
	const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	bool mamba = !strcmp(argv[0], c->provisioner);
	if (mamba && !has_arg(argv, "--offline") && argv[1] && argv[2] &&
	    (!strcmp(argv[2], "create") || !strcmp(argv[2], "install"))) {
		bool any = false;
		for (int i = 0; argv[i] && argv[i + 1]; i++)
			if (!strcmp(argv[i], "--channel")) {
				any = true;
				const char *ch = argv[i + 1];
				if (strstr(ch, "://") == NULL && ch[0] != '/')
					json_array_append_new(hosts, json_string("conda.anaconda.org"));
				else if (ch[0] == '/' || !strncmp(ch, "file://", 7))
					add_read_only(read_only, ch[0] == '/' ? ch : ch + 7);
				else
					add_url_host(hosts, ch);
			}
		for (int i = 0; !any && i < c->n_channels; i++) /* a clone fetches from the configured ones */
			if (strstr(c->channels[i], "://") == NULL && c->channels[i][0] != '/')
				json_array_append_new(hosts, json_string("conda.anaconda.org"));
			else
				add_url_host(hosts, c->channels[i]);
	} else if (!strncmp(base, "python", 6) && has_arg(argv, "pip")) {
		const char *index = arg_after(argv, "--index-url");
		if (index) {
			add_url_host(hosts, index);
			if (strstr(index, "://pypi.org/"))
				json_array_append_new(hosts, json_string("files.pythonhosted.org"));
		}
	} else if (!strcmp(base, "R") && argv[1] && argv[2] && argv[3] && argv[4] &&
		   (strstr(argv[4], "install.packages") || strstr(argv[4], "BiocManager"))) {
		json_array_append_new(hosts, json_string("cloud.r-project.org"));
		if (strstr(argv[4], "BiocManager"))
			json_array_append_new(hosts, json_string("bioconductor.org"));
	}
	return hosts;
}

/* Starts `sbx-egress gateway` for the hosts on a socket in gw_dir (root's,
 * 0711: nothing in it can be swapped by the install user; the gateway
 * opens its files as root, then gives the socket to the install user and
 * drops to it); waits until it listens. */
static int start_gateway(struct env_box *box, json_t *hosts, const struct sbx_run_as *who, char *sock, size_t size,
			 struct sbx_error *e)
{
	char egress[PATH_MAX], policy[PATH_MAX + 16], log[PATH_MAX + 16], owner[48];
	const char *dir = box->gateway_dir;
	if (sbx_sibling_program("sbx-egress", egress, sizeof(egress)) != 0)
		return box_fail(e, "sbx-egress was found neither next to sbx-env nor on PATH", NULL);
	if ((size_t)snprintf(sock, size, "%s/egress.sock", dir) >= size ||
	    strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return box_fail(e, "the gateway's socket path is too long (a shorter data directory)", dir);
	snprintf(policy, sizeof(policy), "%s/policy.json", dir);
	snprintf(log, sizeof(log), "%s/egress.log", dir);
	json_t *doc = json_pack("{s:s,s:O}", "mode", "domain-allowlist", "allowedDomains", hosts);
	int rc = doc ? json_dump_file(doc, policy, JSON_COMPACT) : -1; /* root's directory: no swap */
	json_decref(doc);
	if (rc != 0)
		return box_fail(e, "the gateway's policy", strerror(errno));
	snprintf(owner, sizeof(owner), "%u:%u", (unsigned)who->uid, (unsigned)who->gid);
	const char *argv[16] = { egress, "gateway", "--socket", sock, "--policy", policy, "--log", log, "--ready-fd", "3" };
	int n = 10;
	if (who->switch_user) {
		argv[n++] = "--socket-owner";
		argv[n++] = owner;
		argv[n++] = "--drop-to";
		argv[n++] = owner;
	}
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) != 0)
		return box_fail(e, "a pipe", strerror(errno));
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .stderr_fd = -1, .extra_fds = &ready[1], .n_extra = 1,
			       .new_process_group = true, .die_with_parent = true };
	box->gateway = sbx_spawn_start(&s, NULL, e);
	close(ready[1]);
	char buf[16] = "";
	struct pollfd p = { .fd = ready[0], .events = POLLIN };
	ssize_t got = box->gateway > 0 && poll(&p, 1, GATEWAY_READY_MS) == 1 ? read(ready[0], buf, sizeof(buf) - 1) : -1;
	close(ready[0]);
	if (got >= 6 && !strncmp(buf, "ready\n", 6))
		return 0;
	return box_fail(e, "the egress gateway did not start", NULL);
}

/* SBX_ENV_INSTALL_PASS_ENV: names whose values the tools get too (a
 * mirror's settings); the launch refuses what it must never take. */
static void pass_env(json_t *env)
{
	const char *list = getenv("SBX_ENV_INSTALL_PASS_ENV");
	char *copy = list ? strdup(list) : NULL, *save = NULL;
	int n = 0;
	for (char *name = copy ? strtok_r(copy, ",", &save) : NULL; name && n < PASS_ENV_MAX;
	     name = strtok_r(NULL, ",", &save), n++)
		if (getenv(name))
			json_object_set_new(env, name, json_string(getenv(name)));
	free(copy);
}

static int open_dir(const char *path, const struct sbx_run_as *who, bool own, struct sbx_error *e)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		box_fail(e, path, strerror(errno));
		return -1;
	}
	struct sbx_error oe;
	if (own && who->switch_user && sbx_workspace_own_at(fd, path, who->uid, who->gid, &oe) < 0) {
		close(fd);
		box_fail(e, path, oe.message);
		return -1;
	}
	return fd;
}

/* Boxes and gateway directories a killed sbx-env left: each live one is
 * flock'd by its owner, so one that can be locked is stale. */
static void sweep_stale(const char *tmp)
{
	DIR *d = opendir(tmp);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "box-", 4) != 0)
			continue;
		int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		/* A minute old at least: one being made is not locked yet. */
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_ctime < time(NULL) - 60 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
			char path[PATH_MAX + 300];
			snprintf(path, sizeof(path), "%s/%s", tmp, de->d_name);
			(void)sbx_remove_tree(path);
			snprintf(path, sizeof(path), "%s/gw-%.8s", tmp, de->d_name + 4);
			(void)sbx_remove_tree(path);
		}
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
}

int env_box_open(const struct envctx *c, const char *const *argv, struct env_box *box, struct sbx_error *e)
{
	struct sbx_run_as who;
	char prefix[PATH_MAX], launch[PATH_MAX], uuid[48], sock[128] = "", run_as[48];
	memset(box, 0, sizeof(*box));
	box->spec_fd = box->fds[0] = box->fds[1] = -1;
	if (sbx_run_as_resolve(getenv("SBX_ENV_RUN_AS"), &who, e) != 0)
		return -1;
	if (sbx_sibling_program("sbx-launch", launch, sizeof(launch)) != 0)
		return box_fail(e, "sbx-launch was found neither next to sbx-env nor on PATH", NULL);
	/* The scratch directory: the tools' HOME-like space and root prefix. */
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/tmp", c->root);
	sbx_uuid4("box-", uuid, sizeof(uuid));
	if (mkdir(tmp, 0711) != 0 && errno != EEXIST)
		return box_fail(e, "a scratch directory", strerror(errno));
	sweep_stale(tmp);
	if (snprintf(box->scratch, sizeof(box->scratch), "%s/%s", tmp, uuid) >= (int)sizeof(box->scratch) ||
	    mkdir(box->scratch, 0700) != 0) {
		box->scratch[0] = '\0';
		return box_fail(e, "a scratch directory", strerror(errno));
	}
	if ((box->fds[1] = open_dir(box->scratch, &who, true, e)) < 0)
		goto fail;
	/* Held while the box lives: a sweep skips it (sweep_stale). */
	if (flock(box->fds[1], LOCK_EX | LOCK_NB) != 0) {
		box_fail(e, "locking the scratch directory", strerror(errno));
		goto fail;
	}
	if (snprintf(box->gateway_dir, sizeof(box->gateway_dir), "%s/gw-%.8s", tmp, uuid + 4) >=
	    (int)sizeof(box->gateway_dir)) {
		box->gateway_dir[0] = '\0';
		box_fail(e, "the gateway's directory path is too long", tmp);
		goto fail;
	}
	box->n_fds = 2;
	target_prefix(c, argv, prefix, sizeof(prefix));
	/* A prefix micromamba is to create is made empty first, as the
	 * install user: only it is writable, never its parent. */
	if (prefix[0] && mkdir(prefix, 0755) != 0 && errno != EEXIST) {
		box_fail(e, prefix, strerror(errno));
		goto fail;
	}
	if (prefix[0] && (box->fds[0] = open_dir(prefix, &who, true, e)) < 0)
		goto fail;
	box->disown = prefix[0] && who.switch_user;
	box->uid = who.uid;
	box->gid = who.gid;
	if (!prefix[0] && (box->fds[0] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		goto fail;

	json_t *read_only = json_array(), *env = json_object(), *targv = json_array();
	add_read_only(read_only, c->provisioner);
	add_read_only(read_only, arg_after(argv, "--clone"));
	if (c->cache[0])
		add_read_only(read_only, c->cache);
	for (int i = 0; argv[i]; i++) {
		size_t n = strlen(argv[i]);
		if (argv[i][0] == '/' && n > 4 && !strcmp(argv[i] + n - 4, ".whl")) {
			char dir[PATH_MAX];
			snprintf(dir, sizeof(dir), "%s", argv[i]);
			*strrchr(dir, '/') = '\0';
			add_read_only(read_only, dir);
		}
	}
	const char *extra = getenv("SBX_ENV_INSTALL_READ_ONLY");
	char *copy = extra ? strdup(extra) : NULL, *save = NULL;
	for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save))
		add_read_only(read_only, p);
	free(copy);
	json_t *hosts = call_hosts(c, argv, read_only);
	for (int i = 0; argv[i]; i++) {
		char *real = i == 0 ? realpath(argv[0], NULL) : NULL;
		json_array_append_new(targv, json_string(real ? real : argv[i]));
		free(real);
	}
	json_object_set_new(env, "MAMBA_ROOT_PREFIX", json_string("/workspace/mamba-root"));
	json_object_set_new(env, "CONDA_PKGS_DIRS", json_string(c->cache[0] ? c->cache : "/workspace/pkgs"));
	json_object_set_new(env, "TMPDIR", json_string("/workspace"));
	json_object_set_new(env, "PIP_NO_CACHE_DIR", json_string("1"));
	pass_env(env);
	json_t *spec = json_pack("{s:o,s:s,s:s,s:o,s:o}", "argv", targv, "workspace", "fd:4", "cwd", "/workspace",
				 "readOnlyPaths", read_only, "env", env);
	if (prefix[0])
		json_object_set_new(spec, "environment", json_pack("{s:s,s:b}", "prefix", "fd:3", "writable", 1));
	int rc = 0;
	if (json_array_size(hosts) && mkdir(box->gateway_dir, 0711) != 0)
		rc = box_fail(e, "the gateway's directory", strerror(errno));
	else if (json_array_size(hosts) && (rc = start_gateway(box, hosts, &who, sock, sizeof(sock), e)) == 0)
		json_object_set_new(spec, "network", json_pack("{s:s,s:s}", "mode", "domain-allowlist", "socket", sock));
	json_decref(hosts);
	char *text = rc == 0 ? json_dumps(spec, JSON_COMPACT) : NULL;
	json_decref(spec);
	if (rc != 0)
		goto fail;
	box->spec_fd = memfd_create("install-spec", MFD_CLOEXEC);
	bool written = text && box->spec_fd >= 0 && sbx_write_all(box->spec_fd, text, strlen(text)) == 0 &&
		       lseek(box->spec_fd, 0, SEEK_SET) == 0;
	free(text);
	if (!written) {
		box_fail(e, "the launch spec", strerror(errno));
		goto fail;
	}
	snprintf(run_as, sizeof(run_as), "%u:%u", (unsigned)who.uid, (unsigned)who.gid);
	int k = 0;
	box->launch_argv[k++] = strdup(launch);
	if (who.switch_user) {
		box->launch_argv[k++] = strdup("--run-as");
		box->launch_argv[k++] = strdup(run_as);
	}
	box->launch_argv[k++] = strdup("-");
	return 0;
fail:
	env_box_close(box);
	return -1;
}

void env_box_close(struct env_box *box)
{
	if (box->gateway > 0) {
		kill(-box->gateway, SIGKILL);
		kill(box->gateway, SIGKILL);
		waitpid(box->gateway, NULL, 0);
		box->gateway = 0;
	}
	if (box->gateway_dir[0])
		(void)sbx_remove_tree(box->gateway_dir);
	if (box->scratch[0])
		(void)sbx_remove_tree(box->scratch);
	/* Nothing of the sandbox runs now (its pid namespace died with bwrap,
	 * the gateway above): the prefix goes back to root, read-only to every
	 * uid but root's until the next install. */
	struct sbx_error de;
	if (box->disown && box->fds[0] >= 0 && sbx_tree_disown_at(box->fds[0], "prefix", box->uid, box->gid, &de) < 0)
		sbx_diag_error(&de);
	for (int i = 0; i < 2; i++)
		if (box->fds[i] >= 0)
			close(box->fds[i]);
	if (box->spec_fd >= 0)
		close(box->spec_fd);
	for (int i = 0; i < 6; i++)
		free(box->launch_argv[i]);
	memset(box, 0, sizeof(*box));
	box->spec_fd = box->fds[0] = box->fds[1] = -1;
}
