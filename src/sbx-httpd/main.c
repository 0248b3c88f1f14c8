/* sbx-httpd — the runner HTTP API (runner-api.md) on 127.0.0.1:4311 or a
 * Unix socket. Startup: configuration, data dir, the probe (bwrap must run
 * and have the required options), the execution store; then it serves.
 * Every execution is an sbx-run child; no sandbox logic lives here. */
#include "server.h"
#include "config.h"
#include "environments.h"
#include "connections.h"
#include "head_deadline.h"
#include "info.h"
#include "metrics.h"
#include "metrics_listen.h"
#include "npu.h"
#include "data_reach.h"
#include "../lib/program_path.h"
#include "collect.h"
#include "runner.h"
#include "standby.h"
#include "../lib/run_as.h"
#include "store.h"
#include "../lib/atomic_file.h"
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/probe_cache.h"
#include "../lib/tree_remove.h"
#include "../lib/datadir.h"

#include <pthread.h>
#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <microhttpd.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SBX_BUILD_ID
#define SBX_BUILD_ID "unknown"
#endif

static _Noreturn void die(const char *code, const char *fmt, const char *detail)
{
	struct sbx_error e;
	sbx_error_set(&e, SBX_EXIT_USAGE, code, fmt, detail);
	sbx_die(&e);
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-httpd [--ready-fd FD]\n"
		"\n"
		"Serves the runner API (sbx-httpd(8)) on SCIENCE_AGENT_RUNNER_HOST:SCIENCE_AGENT_RUNNER_PORT\n"
		"(127.0.0.1:4311) or the Unix socket SCIENCE_AGENT_RUNNER_SOCKET. Configured by the\n"
		"SCIENCE_AGENT_* variables only. --ready-fd FD: once listening, write the address there\n"
		"as one JSON line ({\"host\",\"port\"} or {\"socket\"}, and \"metrics\": {\"host\",\"port\"} with\n"
		"SBX_METRICS_LISTEN) and close it.\n");
	sbx_cli_print_exit_codes(out);
}

/* The sandbox group opens the data root and every egress socket: a host
 * account in it (as its primary group or a member) could do the same. */
static void warn_group_members(const struct sbx_run_as *who)
{
	struct passwd *pw;
	setpwent();
	while ((pw = getpwent()))
		if (pw->pw_gid == who->gid && pw->pw_uid != who->uid && pw->pw_uid != 0)
			sbx_diag("warning", "sandbox-group-shared", NULL,
				 "host account %.64s has the sandbox group %u as its primary group: it can enter the data "
				 "dir and speak to egress gateways",
				 pw->pw_name, (unsigned)who->gid);
	endpwent();
	struct group *gr = getgrgid(who->gid);
	for (char **m = gr ? gr->gr_mem : NULL; m && *m; m++)
		sbx_diag("warning", "sandbox-group-shared", NULL,
			 "host account %.64s is a member of the sandbox group %u: it can enter the data dir and speak "
			 "to egress gateways",
			 *m, (unsigned)who->gid);
}

/* The data dir and the directories the API shows, checked writable. */
static void prepare_data_dir(const struct config *c)
{
	struct sbx_error e;
	static const enum sbx_data_area subdirs[] = { SBX_DATA_PROJECTS, SBX_DATA_REMOTE_WORKSPACES,
						      SBX_DATA_RUNNER_EXECUTIONS, SBX_DATA_RUNNER_UPLOADS };
	char path[PATH_MAX + 64];
	if (sbx_mkdir_p(c->data_dir, 0755, &e) != 0)
		sbx_die(&e);
	/* Uploads the last process was still receiving are dropped. */
	sbx_data_path(c->data_dir, SBX_DATA_RUNNER_UPLOADS, NULL, path, sizeof(path));
	sbx_remove_tree(path);
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		sbx_data_path(c->data_dir, subdirs[i], NULL, path, sizeof(path));
		if (sbx_mkdir_p(path, 0755, &e) != 0)
			sbx_die(&e);
	}
	/* As root: only root and the sandbox's group may pass the data root, so
	 * no other host user reaches a workspace (or a set-uid file a workload
	 * left there before the runner cleared it). bwrap, which runs as the
	 * sandbox uid and finds each --bind-fd directory again by its name,
	 * still can. */
	struct sbx_run_as who;
	if (geteuid() == 0 && sbx_run_as_resolve(NULL, &who, &e) == 0) {
		int dfd = open(c->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || fchown(dfd, 0, who.gid) != 0 || fchmod(dfd, 0710) != 0)
			die("data-dir-unusable", "SCIENCE_AGENT_DATA_DIR: %s: cannot restrict it to root and the sandbox group", c->data_dir);
		close(dfd);
		warn_group_members(&who);
		httpd_check_data_reach(c->data_dir, who.gid);
	}
	snprintf(path, sizeof(path), "%s/.write-check-XXXXXX", c->data_dir);
	int fd = mkstemp(path);
	if (fd < 0)
		die("data-dir-unwritable", "SCIENCE_AGENT_DATA_DIR: %s is not writable", c->data_dir);
	close(fd);
	unlink(path);
}

/* runner-api 1.1: bwrap must run and have the required options; a host
 * that cannot build a sandbox only warns (executions will say why). */
static void preflight(const struct config *c)
{
	char cache[PATH_MAX + 16];
	snprintf(cache, sizeof(cache), "%s/cache", c->data_dir);
	/* As root: the answer for the unprivileged uids workloads run as, the
	 * one every sbx-launch reads; probed here, never on a request's path. */
	struct sbx_run_as who;
	struct sbx_error e;
	bool as_user = geteuid() == 0 && sbx_run_as_resolve(NULL, &who, &e) == 0;
	struct sbx_probe_request req = { .bwrap = c->bwrap, .cache_dir = cache, .as = as_user ? &who : NULL };
	json_t *answer = sbx_probe(&req);
	json_t *missing = json_object_get(answer, "missingOptions");
	if (json_is_null(json_object_get(json_object_get(answer, "bwrap"), "path")))
		die("bwrap-missing", "SCIENCE_AGENT_BWRAP_PATH: %s cannot run", c->bwrap);
	if (json_array_size(missing)) {
		char list[512] = "";
		size_t i;
		json_t *v;
		json_array_foreach(missing, i, v)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", json_string_value(v));
		die("bwrap-options", "bubblewrap lacks required sandbox options: %s", list);
	}
	if (!json_is_true(json_object_get(answer, "usable")))
		sbx_diag("warning", "sandbox-unusable", NULL, "the probe sandbox could not be built: %s",
			 json_string_value(json_object_get(answer, "detail")) ? json_string_value(json_object_get(answer, "detail")) : "unknown");
	json_decref(answer);
}

static void find_programs(struct server *s)
{
	if (sbx_sibling_program("sbx-run", s->prog.run, sizeof(s->prog.run)) != 0)
		die("sbx-run-missing", "%s", "sbx-run was found neither next to sbx-httpd nor on PATH");
	if (sbx_sibling_program("sbx-env", s->prog.env, sizeof(s->prog.env)) != 0)
		die("sbx-env-missing", "%s", "sbx-env was found neither next to sbx-httpd nor on PATH");
	if (sbx_sibling_program("sbx-ws", s->prog.ws, sizeof(s->prog.ws)) != 0)
		die("sbx-ws-missing", "%s", "sbx-ws was found neither next to sbx-httpd nor on PATH");
	if (sbx_sibling_program("sbx-skills", s->prog.skills, sizeof(s->prog.skills)) != 0)
		die("sbx-skills-missing", "%s", "sbx-skills was found neither next to sbx-httpd nor on PATH");
	if (sbx_sibling_program("sbx-secrets", s->prog.secrets, sizeof(s->prog.secrets)) != 0)
		die("sbx-secrets-missing", "%s", "sbx-secrets was found neither next to sbx-httpd nor on PATH");
	if (sbx_sibling_program("sbx-snap", s->prog.snap, sizeof(s->prog.snap)) != 0)
		die("sbx-snap-missing", "%s", "sbx-snap was found neither next to sbx-httpd nor on PATH");
	bool egress = sbx_sibling_program("sbx-egress", s->prog.egress, sizeof(s->prog.egress)) == 0;
	bool bridge = sbx_sibling_program("sbx-egress-bridge", s->prog.bridge, sizeof(s->prog.bridge)) == 0;
	s->network_available = egress && bridge;
	if (!s->network_available)
		snprintf(s->network_reason, sizeof(s->network_reason),
			 "Sandbox network access (domain-allowlist) is unavailable: sbx-egress and sbx-egress-bridge are not installed next to sbx-httpd");
}

/* Where fd listens, as the --ready-fd line: {"host","port"} or {"socket"}. */
static void describe(int fd, char *where, size_t size)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len = sizeof(ss);
	char host[NI_MAXHOST] = "", serv[NI_MAXSERV] = "";
	getsockname(fd, (struct sockaddr *)&ss, &len);
	if (ss.ss_family == AF_UNIX) {
		snprintf(where, size, "{\"socket\":\"%.300s\"}", ((struct sockaddr_un *)&ss)->sun_path);
		return;
	}
	getnameinfo((struct sockaddr *)&ss, len, host, sizeof(host), serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(where, size, "{\"host\":\"%.100s\",\"port\":%.8s}", host, serv);
}

/* host:port, or the process stops naming the variable that set it. */
static int listen_tcp(const char *host, int port_number, const char *variable, char *where, size_t size)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *res;
	char port[8], why[600];
	snprintf(port, sizeof(port), "%d", port_number);
	if (getaddrinfo(host, port, &hints, &res) != 0)
		die("bad-config", "%s: the host cannot be resolved", variable);
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 128) != 0) {
		snprintf(why, sizeof(why), "%s: %s", variable, strerror(errno));
		die("listen-failed", "cannot listen on %s", why);
	}
	freeaddrinfo(res);
	describe(fd, where, size);
	return fd;
}

/* systemd socket activation (the sd_listen_fds(3) protocol, no libsystemd):
 * exactly one listening stream socket on fd 3, meant for this process. */
static int activated_socket(char *where, size_t size)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	int listening = 0;
	socklen_t len = sizeof(listening);
	if (!pid || !fds || strtol(pid, NULL, 10) != (long)getpid())
		return -1;
	if (strcmp(fds, "1") != 0)
		die("bad-activation", "LISTEN_FDS=%s: sbx-httpd takes exactly one socket", fds);
	if (getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
		die("bad-activation", "%s", "fd 3 is not a listening socket");
	fcntl(3, F_SETFD, FD_CLOEXEC);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	describe(3, where, size);
	return 3;
}

/* runner-api 1.1: parent 0700, a stale socket removed, the socket 0600. */
static int listen_unix(const struct config *c, char *where, size_t size)
{
	struct sbx_error e;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", c->socket_path);
	*strrchr(parent, '/') = '\0';
	if (*parent && sbx_mkdir_p(parent, 0700, &e) != 0)
		sbx_die(&e);
	if (*parent)
		chmod(parent, 0700);
	struct stat st;
	if (lstat(c->socket_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			die("bad-config", "SCIENCE_AGENT_RUNNER_SOCKET: %s exists and is not a socket", c->socket_path);
		unlink(c->socket_path);
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->socket_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	mode_t old = umask(0177);
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc != 0 || chmod(c->socket_path, 0600) != 0 || listen(fd, 128) != 0)
		die("listen-failed", "SCIENCE_AGENT_RUNNER_SOCKET: %s", strerror(errno));
	json_t *w = json_pack("{s:s}", "socket", c->socket_path);
	char *text = json_dumps(w, JSON_COMPACT);
	snprintf(where, size, "%s", text ? text : "{}");
	free(text);
	json_decref(w);
	return fd;
}

/* Open files: every connection (and the few past the cap that carry a
 * 503), and each request in flight with the fds it holds for its sbx-run
 * (workspace, pipes), beside the daemon's own. The soft limit goes to the
 * hard one; where even that is short, both caps shrink to fit, with a
 * warning, rather than the daemon failing at its first busy moment. */
#define FDS_PER_REQUEST 8
#define FDS_RESERVE 256

static void raise_fd_limit(struct config *c)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	long long limit = rl.rlim_cur > (rlim_t)1 << 30 ? 1 << 30 : (long long)rl.rlim_cur;
	if (limit >= (long long)connections_needed_fds() + c->max_requests * FDS_PER_REQUEST + FDS_RESERVE)
		return;
	long long own = limit > 4 * FDS_RESERVE ? FDS_RESERVE : limit / 3, room = limit - own;
	long long requests = room / (2 * FDS_PER_REQUEST), was_c = c->max_connections, was_r = c->max_requests;
	if (requests < c->max_requests)
		c->max_requests = requests > 1 ? requests : 1;
	long long conns = (room - c->max_requests * FDS_PER_REQUEST) * 4 / 5;
	if (conns < c->max_connections)
		c->max_connections = conns > 4 ? conns : 4;
	sbx_diag("warning", "connections-capped", NULL,
		 "RLIMIT_NOFILE %lld: SCIENCE_AGENT_MAX_CONNECTIONS %lld -> %lld, SCIENCE_AGENT_MAX_REQUESTS %lld -> %lld",
		 limit, was_c, c->max_connections, was_r, c->max_requests);
}

int main(int argc, char **argv)
{
	struct server *s = &g_server;
	int ready_fd = -1;

	sbx_diag_program("sbx-httpd");
	metrics_start();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return SBX_EXIT_OK;
		} else if (!strcmp(argv[i], "--version")) {
			sbx_cli_print_version("sbx-httpd");
			return SBX_EXIT_OK;
		} else if (!strcmp(argv[i], "--ready-fd") && i + 1 < argc) {
			ready_fd = (int)sbx_cli_parse_long("--ready-fd", argv[++i], 3, 1 << 20);
		} else {
			sbx_cli_bad_option("sbx-httpd", argv[i]);
		}
	}
	config_load(&s->cfg);
	snprintf(s->version, sizeof(s->version), "%s", SBX_BUILD_ID);
	info_execution_identity(s);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->active_changed, NULL);
	pthread_mutex_init(&s->db_lock, NULL);
	s->seen_ids = json_object();
	/* The stages this process runs see the same data dir and bwrap. */
	setenv("SBX_DATA_DIR", s->cfg.data_dir, 1);
	setenv("SCIENCE_AGENT_BWRAP_PATH", s->cfg.bwrap, 1);
	prepare_data_dir(&s->cfg);
	find_programs(s);
	npu_start();
	preflight(&s->cfg);
	struct sbx_error e;
	if (store_open(s, &e) != 0)
		sbx_die(&e);
	collect_start();

	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL); /* every thread: only sigwait below sees them */
	signal(SIGPIPE, SIG_IGN);
	char where[512];
	int fd = activated_socket(where, sizeof(where));
	bool own_socket = fd < 0 && s->cfg.socket_path[0];
	if (fd < 0)
		fd = s->cfg.socket_path[0] ? listen_unix(&s->cfg, where, sizeof(where))
					   : listen_tcp(s->cfg.host, s->cfg.port, "SCIENCE_AGENT_RUNNER_HOST:SCIENCE_AGENT_RUNNER_PORT",
							where, sizeof(where));
	raise_fd_limit(&s->cfg);
	info_limits_init();
	head_watch_start();
	runner_sweep(); /* before any run of ours starts: only what others left */
	struct MHD_Daemon *d = server_start(fd);
	if (!d)
		die("listen-failed", "%s", "libmicrohttpd did not start");
	sbx_diag("info", "listening", NULL, "%s", where);
	char metrics_where[256] = "";
	if (s->cfg.metrics_host[0]) {
		int mfd = listen_tcp(s->cfg.metrics_host, s->cfg.metrics_port, "SBX_METRICS_LISTEN", metrics_where,
				     sizeof(metrics_where));
		if (!metrics_listen_start(mfd))
			die("listen-failed", "%s", "SBX_METRICS_LISTEN: libmicrohttpd did not start");
		sbx_diag("info", "metrics-listening", NULL, "%s", metrics_where);
	}
	standby_start();
	/* Environments set themselves up in the background; /health answers throughout. */
	if (s->cfg.scientific_envs)
		environments_start_setup();
	if (ready_fd >= 0) {
		if (metrics_where[0]) /* {"host","port","metrics":{"host","port"}} */
			dprintf(ready_fd, "%.*s,\"metrics\":%s}\n", (int)strlen(where) - 1, where, metrics_where);
		else
			dprintf(ready_fd, "%s\n", where);
		close(ready_fd);
	}
	int sig;
	sigwait(&mask, &sig);
	/* Running executions are stopped as a cancel stops them and waited
	 * for (their managed records read "unknown" at the next start); one
	 * still there after the grace dies with us. The socket goes now. */
	runner_drain(RUNNER_GRACE_MS + RUNNER_KILL_GRACE_MS);
	standby_stop();
	if (own_socket) /* an activated socket is systemd's to remove */
		unlink(s->cfg.socket_path);
	return SBX_EXIT_OK;
}
