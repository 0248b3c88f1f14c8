/* egress.c — the run's egress gateway: one per policy revision, found by
 * its socket (<egress dir>/<revision>.sock), started detached when none
 * answers, and held (a shared lock) so it cannot idle out during the run. */
#include "run.h"
#include "../lib/program_path.h"
#include "../lib/atomic_file.h"
#include "../lib/child_env.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>


static int unavailable(struct sbx_error *e, const char *fmt, const char *detail)
{
	char what[700];
	snprintf(what, sizeof(what), fmt, detail);
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "egress-unavailable",
		      "Sandbox network access (domain-allowlist) is unavailable: %s", what);
	return -1;
}

/* A live gateway holds SOCKET.alive exclusively (sbx-egress(1)); connecting
 * would need the socket's owner, which is the workload's uid. */
static bool gateway_alive(const char *sock)
{
	char path[PATH_MAX + 32];
	struct stat st;
	snprintf(path, sizeof(path), "%s.alive", sock);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd);
	return held && lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Starts `sbx-egress gateway` in its own session, outside this run's
 * process group, and waits for it to say it listens. */
static int start_gateway(struct run *r, const char *base, const char *owner, struct sbx_error *e)
{
	char egress[PATH_MAX], sock[PATH_MAX + 16], policy[PATH_MAX + 16], log[PATH_MAX + 16], err[PATH_MAX + 16],
		idle[24];
	snprintf(sock, sizeof(sock), "%s.sock", base);
	snprintf(policy, sizeof(policy), "%s.json", base);
	snprintf(log, sizeof(log), "%s.log", base);
	snprintf(err, sizeof(err), "%s.err", base);
	snprintf(idle, sizeof(idle), "%d", r->egress_idle_s);
	if (sbx_sibling_program("sbx-egress", egress, sizeof(egress)) != 0)
		return unavailable(e, "%s", "sbx-egress was found neither next to sbx-run nor on PATH");
	char *text = json_dumps(r->req.egress_policy, JSON_COMPACT);
	int rc = text ? sbx_atomic_write(policy, text, strlen(text), 0600, e) : -1;
	free(text);
	if (rc != 0)
		return unavailable(e, "%s", "cannot write the policy file");
	const char *argv[18 + 2 * RUN_MAX_RESOLVE] = { egress, "gateway", "--socket", sock, "--policy", policy, "--log",
						      log, "--idle-exit-s", idle, "--ready-fd", "3" };
	int argc = 12;
	if (owner) {
		/* The workload's uid reaches the socket; the gateway, which
		 * sbx-egress confines once it listens, runs as that uid too. */
		argv[argc++] = "--socket-owner";
		argv[argc++] = owner;
		argv[argc++] = "--drop-to";
		argv[argc++] = owner;
	}
	for (int i = 0; i < r->n_egress_resolve; i++) {
		argv[argc++] = "--resolve";
		argv[argc++] = r->egress_resolve[i];
	}
	int ready[2];
	/* The pass-list environment (child_env.h): a token never reaches the
	 * one long-lived host process that parses every tenant's bytes. */
	char **env = sbx_child_environ();
	if (!env || pipe2(ready, O_CLOEXEC) != 0) {
		free(env);
		return unavailable(e, "%s", strerror(errno ? errno : ENOMEM));
	}
	int detached = run_detach(argv, env, err, ready[1], false);
	close(ready[1]);
	free(env);
	char line[600];
	if (run_gateway_ready(ready[0], detached == 0, err, line, sizeof(line)))
		return 0;
	return unavailable(e, "%s", line);
}

int run_egress_acquire(struct run *r, const struct sbx_run_as *who, struct sbx_error *e)
{
	char base[PATH_MAX], sock[PATH_MAX + 16], lock[PATH_MAX + 16], start[PATH_MAX + 16], owner[48];

	if (!r->req.egress_policy)
		return 0;
	if (r->req.secret_refs)
		return run_secrets_acquire(r, who, e);
	if (snprintf(base, sizeof(base), "%s/%s", r->egress_dir, r->req.egress_revision) >= (int)sizeof(base) ||
	    strlen(base) + 5 >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return unavailable(e, "the socket path under %.300s is longer than the 107 bytes Linux allows", r->egress_dir);
	snprintf(sock, sizeof(sock), "%s.sock", base);
	snprintf(lock, sizeof(lock), "%s.sock.lock", base);
	snprintf(start, sizeof(start), "%s.start", base);
	/* 0711: the workload's uid reaches its socket; it lists nothing. */
	if (sbx_mkdir_p(r->egress_dir, 0711, e) != 0)
		return unavailable(e, "%.600s", e->message);
	int start_fd = open(start, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	r->egress_lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (start_fd < 0 || r->egress_lock_fd < 0 || flock(start_fd, LOCK_EX) != 0 ||
	    flock(r->egress_lock_fd, LOCK_SH) != 0) {
		if (start_fd >= 0)
			close(start_fd);
		return unavailable(e, "cannot lock %s", base);
	}
	snprintf(owner, sizeof(owner), "%u:%u", (unsigned)who->uid, (unsigned)who->gid);
	int rc = gateway_alive(sock) ? 0 : start_gateway(r, base, who->switch_user ? owner : NULL, e);
	close(start_fd);
	if (rc != 0)
		return -1;
	json_object_set_new(r->req.spec, "network", json_pack("{s:s,s:s}", "mode", "domain-allowlist", "socket", sock));
	return 0;
}
