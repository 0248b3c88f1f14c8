/* secret_gateway.c — a run that names secrets (secretRefs): sbx-secrets checks
 * them against the run's network policy, the workload gets a placeholder
 * per secret, and a gateway of this run alone (its child) holds the values
 * and the run's CA; at the end its refusals become events and it goes. */
#include "run.h"
#include "../lib/atomic_file.h"
#include "../lib/child_env.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/program_path.h"
#include "../lib/spawn.h"
#include "../lib/stage_call.h"
#include "../lib/tree_remove.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STALE_AFTER_S 120

#define CHECK_TIMEOUT_MS 30000

static int unavailable(struct sbx_error *e, const char *what, const char *detail)
{
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "secrets-unavailable", "The run's secrets are unavailable: %s%s%.600s",
		      what, detail ? ": " : "", detail ? detail : "");
	return -1;
}

static void hex(char *out, size_t bytes)
{
	unsigned char raw[32];
	if (getrandom(raw, bytes, 0) != (ssize_t)bytes)
		abort(); /* no randomness: no placeholder worth the name */
	for (size_t i = 0; i < bytes; i++)
		sprintf(out + 2 * i, "%02x", raw[i]);
}

/* `sbx-secrets check --policy - [--touch] NAME...`: each secret exists and
 * may go only where the policy allows; their env names. */
static json_t *check(struct run *r, struct sbx_error *e)
{
	char program[PATH_MAX];
	if (sbx_sibling_program("sbx-secrets", program, sizeof(program)) != 0) {
		unavailable(e, "sbx-secrets was found neither next to sbx-run nor on PATH", NULL);
		return NULL;
	}
	const char *argv[8 + SBX_RUN_MAX_SECRETS] = { program, "check", "--store", r->secrets_dir, "--policy", "-", "--touch" };
	int argc = 7;
	size_t i;
	json_t *v;
	json_array_foreach(r->req.secret_refs, i, v)
		argv[argc++] = json_string_value(v);
	char *policy = json_dumps(r->req.egress_policy, JSON_COMPACT);
	int in = memfd_create("sbx-policy", MFD_CLOEXEC);
	bool ok = policy && in >= 0 && sbx_write_all(in, policy, strlen(policy)) == 0 && lseek(in, 0, SEEK_SET) == 0;
	free(policy);
	char **env = sbx_child_environ();
	struct sbx_spawn s = { .argv = argv, .envp = env, .stdin_fd = in, .stdout_fd = -1, .stderr_fd = -1,
			       .die_with_parent = true };
	json_t *out = ok && env ? sbx_stage_call(&s, CHECK_TIMEOUT_MS, 1u << 20, e) : NULL;
	if (!ok || !env)
		unavailable(e, "cannot ask sbx-secrets", strerror(errno ? errno : ENOMEM));
	free(env);
	if (in >= 0)
		close(in);
	return out;
}

/* The placeholders, each in the spec's env under its secret's name. */
static int place(struct run *r, const json_t *checked, struct sbx_error *e)
{
	json_t *env = json_object_get(r->req.spec, "env");
	if (!env) {
		env = json_object();
		json_object_set_new(r->req.spec, "env", env);
	}
	r->placeholders = json_array();
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(checked, "secrets"), i, v) {
		const char *name = sbx_json_string_or(v, "name", ""), *var = sbx_json_string_or(v, "env", "");
		char ph[160], random[33];
		if (json_object_get(env, var)) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-request",
				      "env.%s: the workload gets secret %s's placeholder under that name; leave it out of env",
				      var, name);
			return -1;
		}
		hex(random, 16);
		snprintf(ph, sizeof(ph), "sbx-secret-%s-%s", name, random);
		json_object_set_new(env, var, json_string(ph));
		json_array_append_new(r->placeholders, json_pack("{s:s,s:s,s:s}", "name", name, "env", var, "placeholder", ph));
	}
	return 0;
}

/* Starts `sbx-egress gateway` as our child in a directory of this run's
 * own, with the secrets and a fresh CA; waits until it listens. */
static int start(struct run *r, const struct sbx_run_as *who, struct sbx_error *e)
{
	char egress[PATH_MAX], sock[PATH_MAX + 16], policy[PATH_MAX + 16], log[PATH_MAX + 16], err[PATH_MAX + 16],
		ca[PATH_MAX + 16], owner[48], id[17];
	if (sbx_sibling_program("sbx-egress", egress, sizeof(egress)) != 0)
		return unavailable(e, "sbx-egress was found neither next to sbx-run nor on PATH", NULL);
	hex(id, 8);
	if (snprintf(r->secret_gateway_dir, sizeof(r->secret_gateway_dir), "%s/run-%s", r->egress_dir, id) >=
		    (int)sizeof(r->secret_gateway_dir) ||
	    strlen(r->secret_gateway_dir) + 8 >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return unavailable(e, "the gateway's socket path is too long under", r->egress_dir);
	/* 0711: the workload's uid reaches its socket; it lists nothing. */
	if (sbx_mkdir_p(r->egress_dir, 0711, e) != 0 || mkdir(r->secret_gateway_dir, 0711) != 0) {
		r->secret_gateway_dir[0] = '\0';
		return unavailable(e, "cannot make the gateway's directory", strerror(errno));
	}
	snprintf(sock, sizeof(sock), "%s/gw.sock", r->secret_gateway_dir);
	snprintf(policy, sizeof(policy), "%s/policy.json", r->secret_gateway_dir);
	snprintf(log, sizeof(log), "%s/audit.log", r->secret_gateway_dir);
	snprintf(err, sizeof(err), "%s/gateway.err", r->secret_gateway_dir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", r->secret_gateway_dir);
	if (json_dump_file(r->req.egress_policy, policy, JSON_COMPACT) != 0)
		return unavailable(e, "cannot write the gateway's policy", strerror(errno));
	const char *argv[32 + 2 * RUN_MAX_RESOLVE + 2 * SBX_RUN_MAX_SECRETS] = {
		egress, "gateway", "--socket", sock, "--policy", policy, "--log", log, "--ready-fd", "3",
		"--secrets-dir", r->secrets_dir, "--ca-out", ca,
	};
	int argc = 14;
	snprintf(owner, sizeof(owner), "%u:%u", (unsigned)who->uid, (unsigned)who->gid);
	if (who->switch_user) {
		argv[argc++] = "--socket-owner";
		argv[argc++] = owner;
		argv[argc++] = "--drop-to";
		argv[argc++] = owner;
	}
	if (r->egress_upstream_ca) {
		argv[argc++] = "--upstream-ca";
		argv[argc++] = r->egress_upstream_ca;
	}
	for (int i = 0; i < r->n_egress_resolve; i++) {
		argv[argc++] = "--resolve";
		argv[argc++] = r->egress_resolve[i];
	}
	char specs[SBX_RUN_MAX_SECRETS][256];
	size_t i;
	json_t *v;
	json_array_foreach(r->placeholders, i, v) {
		snprintf(specs[i], sizeof(specs[i]), "%s=%s", sbx_json_string_or(v, "name", ""),
			 sbx_json_string_or(v, "placeholder", ""));
		argv[argc++] = "--secret";
		argv[argc++] = specs[i];
	}
	int ready[2], errfd = open(err, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	char **env = sbx_child_environ();
	if (errfd < 0 || !env || pipe2(ready, O_CLOEXEC) != 0) {
		if (errfd >= 0)
			close(errfd);
		free(env);
		return unavailable(e, "cannot start the gateway", strerror(errno ? errno : ENOMEM));
	}
	/* Our child, in its own group, killed with us: it serves this run only. */
	struct sbx_spawn s = { .argv = argv, .envp = env, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = errfd,
			       .extra_fds = &ready[1], .n_extra = 1, .new_process_group = true, .die_with_parent = true,
			       .helper = true };
	r->secret_gateway = sbx_spawn_start(&s, NULL, e);
	close(ready[1]);
	close(errfd);
	free(env);
	char line[600];
	if (run_gateway_ready(ready[0], r->secret_gateway > 0, err, line, sizeof(line))) {
		json_object_set_new(r->req.spec, "network",
				    json_pack("{s:s,s:s,s:s}", "mode", "domain-allowlist", "socket", sock, "caCertificate", ca));
		return 0;
	}
	return unavailable(e, "its gateway did not start", line);
}

/* The directories of secret gateways whose run was killed (sbx-run died,
 * its gateway with it): no gateway holds their gw.sock.alive, and they are
 * older than any start takes. */
static void sweep_stale(const char *egress_dir)
{
	int dfd = open(egress_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct dirent *ent;
	struct stat st;
	int removed = 0;
	while ((ent = readdir(d)) && removed < 64) {
		if (strncmp(ent->d_name, "run-", 4) != 0 || fstatat(dfd, ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(st.st_mode) || time(NULL) - st.st_mtime < STALE_AFTER_S)
			continue;
		char alive[300];
		snprintf(alive, sizeof(alive), "%s/gw.sock.alive", ent->d_name);
		int fd = openat(dfd, alive, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		bool held = fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0;
		if (fd >= 0)
			close(fd);
		if (!held && sbx_remove_tree_at(dfd, ent->d_name) == 0)
			removed++;
	}
	closedir(d);
}

int run_secrets_acquire(struct run *r, const struct sbx_run_as *who, struct sbx_error *e)
{
	sweep_stale(r->egress_dir);
	json_t *checked = check(r, e);
	int rc = checked ? place(r, checked, e) : -1;
	json_decref(checked);
	return rc == 0 ? start(r, who, e) : -1;
}

/* Each refusal of the run's gateway that named a secret, as an event. */
static void refusals(struct run *r)
{
	char path[sizeof(r->secret_gateway_dir) + 16], *text;
	size_t len;
	struct sbx_error ignored;
	snprintf(path, sizeof(path), "%s/audit.log", r->secret_gateway_dir);
	if (!(text = sbx_read_file_capped(path, 4u << 20, &len, &ignored)))
		return;
	int n = 0;
	for (char *line = text, *next; line && *line && n < 100; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		json_t *a = json_loads(line, 0, NULL);
		if (a && json_object_get(a, "secret") && n++ < 100)
			run_event("secret-refused", r,
				  json_pack("{s:O,s:O,s:O,s:O}", "secret", json_object_get(a, "secret"), "host",
					    json_object_get(a, "host"), "status", json_object_get(a, "status"), "reason",
					    json_object_get(a, "reason")));
		json_decref(a);
	}
	free(text);
}

void run_secrets_release(struct run *r)
{
	if (r->secret_gateway > 0) {
		kill(r->secret_gateway, SIGTERM);
		waitpid(r->secret_gateway, NULL, 0);
		r->secret_gateway = 0;
	}
	if (r->secret_gateway_dir[0]) {
		refusals(r);
		sbx_remove_tree(r->secret_gateway_dir);
		r->secret_gateway_dir[0] = '\0';
	}
}
