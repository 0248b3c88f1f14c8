/* gateway.c — `sbx-egress gateway`: the policy, the Unix socket (0600,
 * stale one replaced, removed on exit where it may), the privilege drop
 * (confine.c), the accept loop with a thread per connection, and the exit
 * when idle and no run holds SOCKET.lock. */
#include "egress.h"
#include "secrets.h"
#include "../lib/cli.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define THREAD_STACK (512 * 1024)

struct options {
	const char *socket_path, *policy_path, *log_path, *proxy_url, *drop_to;
	long owner_uid, owner_gid;
	int idle_exit_s, ready_fd;
	int dir_fd;              /* the socket's directory (O_PATH), opened before the drop */
	const char *socket_name; /* the socket's name in it */
	int lock_fd;             /* SOCKET.lock, opened before the drop; -1: not yet */
	struct gw_secrets_options secrets;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-egress gateway --socket PATH --policy FILE|- [--resolve NAME:PORT:ADDR[,ADDR]...]...\n"
		"                          [--upstream-proxy URL] [--log FILE] [--socket-owner UID[:GID]]\n"
		"                          [--connect-timeout-ms N] [--idle-timeout-ms N] [--tunnel-lifetime-s N]\n"
		"                          [--head-timeout-ms N] [--max-tunnels N] [--peer-max-connections N]\n"
		"                          [--peer-max-heads N] [--log-max-bytes N] [--log-refusal-interval-s N]\n"
		"                          [--log-refusal-burst N] [--idle-exit-s N] [--ready-fd N] [--drop-to USER]\n"
		"                          [--secrets-dir DIR --secret NAME=PLACEHOLDER... [--ca-out FILE]\n"
		"                          [--upstream-ca FILE]]\n"
		"\n"
		"Serves the policy's allowlist as an HTTP proxy (CONNECT and absolute form) on a\n"
		"Unix socket. Started as root it serves as USER (NAME, UID or UID:GID; default\n"
		"$SBX_RUN_AS, else the sbx user, else 10001) with no capabilities. With --secret,\n"
		"HTTPS to a secret's hosts is intercepted with a per-run CA (written to --ca-out)\n"
		"and the placeholder replaced by the value. See sbx-egress(1).\n");
	sbx_cli_print_exit_codes(out);
}

static void parse_owner(const char *text, struct options *o)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", text);
	char *colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	o->owner_uid = sbx_cli_parse_long("--socket-owner UID", buf, 0, 4294967294L);
	o->owner_gid = colon ? sbx_cli_parse_long("--socket-owner GID", colon + 1, 0, 4294967294L) : -1;
}

static void parse_options(int argc, char **argv, struct options *o, struct gateway *g)
{
	enum { O_SOCKET = 1, O_POLICY, O_RESOLVE, O_PROXY, O_LOG, O_OWNER, O_CONNECT, O_IDLE, O_LIFE, O_MAX, O_EXIT, O_READY,
	       O_DROP, O_HEAD, O_PEER_CONNS, O_PEER_HEADS, O_LOG_MAX, O_LOG_INTERVAL, O_LOG_BURST, O_SECRETS_DIR,
	       O_SECRET, O_CA_OUT, O_UPSTREAM_CA, O_HELP };
	static const struct option options[] = {
		{ "socket", required_argument, NULL, O_SOCKET }, { "policy", required_argument, NULL, O_POLICY },
		{ "resolve", required_argument, NULL, O_RESOLVE }, { "upstream-proxy", required_argument, NULL, O_PROXY },
		{ "log", required_argument, NULL, O_LOG }, { "socket-owner", required_argument, NULL, O_OWNER },
		{ "connect-timeout-ms", required_argument, NULL, O_CONNECT },
		{ "idle-timeout-ms", required_argument, NULL, O_IDLE },
		{ "tunnel-lifetime-s", required_argument, NULL, O_LIFE }, { "max-tunnels", required_argument, NULL, O_MAX },
		{ "idle-exit-s", required_argument, NULL, O_EXIT }, { "ready-fd", required_argument, NULL, O_READY },
		{ "drop-to", required_argument, NULL, O_DROP }, { "head-timeout-ms", required_argument, NULL, O_HEAD },
		{ "peer-max-connections", required_argument, NULL, O_PEER_CONNS },
		{ "peer-max-heads", required_argument, NULL, O_PEER_HEADS },
		{ "log-max-bytes", required_argument, NULL, O_LOG_MAX },
		{ "log-refusal-interval-s", required_argument, NULL, O_LOG_INTERVAL },
		{ "log-refusal-burst", required_argument, NULL, O_LOG_BURST },
		{ "secrets-dir", required_argument, NULL, O_SECRETS_DIR }, { "secret", required_argument, NULL, O_SECRET },
		{ "ca-out", required_argument, NULL, O_CA_OUT }, { "upstream-ca", required_argument, NULL, O_UPSTREAM_CA },
		{ "help", no_argument, NULL, O_HELP }, { NULL, 0, NULL, 0 },
	};
	int c;
	opterr = 0;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (c) {
		case O_SOCKET: o->socket_path = optarg; break;
		case O_POLICY: o->policy_path = optarg; break;
		case O_RESOLVE: overrides_add(&g->resolve, optarg); break;
		case O_PROXY: o->proxy_url = optarg; break;
		case O_LOG: o->log_path = optarg; break;
		case O_OWNER: parse_owner(optarg, o); break;
		case O_CONNECT: g->connect_timeout_ms = (int)sbx_cli_parse_long("--connect-timeout-ms", optarg, 1, 600000); break;
		case O_IDLE: g->idle_ms = (int)sbx_cli_parse_long("--idle-timeout-ms", optarg, 1, 86400000); break;
		case O_LIFE: g->lifetime_ms = (int)sbx_cli_parse_long("--tunnel-lifetime-s", optarg, 1, 604800) * 1000; break;
		case O_MAX: g->max_tunnels = (int)sbx_cli_parse_long("--max-tunnels", optarg, 1, 100000); break;
		case O_EXIT: o->idle_exit_s = (int)sbx_cli_parse_long("--idle-exit-s", optarg, 1, 86400 * 30); break;
		case O_READY: o->ready_fd = (int)sbx_cli_parse_long("--ready-fd", optarg, 3, 1 << 20); break;
		case O_DROP: o->drop_to = optarg; break;
		case O_HEAD: g->head_timeout_ms = (int)sbx_cli_parse_long("--head-timeout-ms", optarg, 1, 600000); break;
		case O_PEER_CONNS:
			g->peer_max_connections = (int)sbx_cli_parse_long("--peer-max-connections", optarg, 1, 100000);
			break;
		case O_PEER_HEADS: g->peer_max_heads = (int)sbx_cli_parse_long("--peer-max-heads", optarg, 1, 100000); break;
		case O_LOG_MAX: g->log_max_bytes = sbx_cli_parse_long("--log-max-bytes", optarg, 16384, 1L << 40); break;
		case O_LOG_INTERVAL:
			g->refusal_interval_s = (int)sbx_cli_parse_long("--log-refusal-interval-s", optarg, 1, 86400);
			break;
		case O_LOG_BURST: g->refusal_burst = (int)sbx_cli_parse_long("--log-refusal-burst", optarg, 0, 1000000); break;
		case O_SECRETS_DIR: o->secrets.store = optarg; break;
		case O_SECRET:
			if (o->secrets.n_specs == GW_MAX_SECRETS)
				sbx_cli_usage_error("sbx-egress", "--secret: at most 32");
			o->secrets.specs[o->secrets.n_specs++] = optarg;
			break;
		case O_CA_OUT: o->secrets.ca_out = optarg; break;
		case O_UPSTREAM_CA: o->secrets.upstream_ca = optarg; break;
		case O_HELP: usage(stdout); exit(SBX_EXIT_OK);
		default: sbx_cli_bad_option("sbx-egress", argv[optind - 1]);
		}
	}
	if (optind != argc)
		sbx_cli_usage_error("sbx-egress", "gateway takes no operands");
	if (!o->socket_path || !o->policy_path)
		sbx_cli_usage_error("sbx-egress", "gateway needs --socket PATH and --policy FILE");
	if ((o->secrets.store || o->secrets.ca_out || o->secrets.upstream_ca) && !o->secrets.n_specs)
		sbx_cli_usage_error("sbx-egress", "--secrets-dir, --ca-out and --upstream-ca go with --secret");
	if (strlen(o->socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		sbx_cli_usage_error("sbx-egress", "--socket: longer than the 107 bytes a Unix socket path may have");
}

/* SOCKET.alive, held exclusively for the gateway's life: how others (and
 * a second gateway) tell a live socket from a stale one without connecting,
 * which the socket's 0600 owner may be the only one allowed to do. */
static int hold_alive_lock(const struct options *o, struct sbx_error *e)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s.alive", o->socket_path);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-socket", "--socket: %s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "socket-in-use", "--socket: %s: another gateway serves it", o->socket_path);
		close(fd);
		return -1;
	}
	return fd;
}

/* Binds the socket 0600, 0660 with an owner group (a stale socket is
 * replaced, anything else kept). */
static int listen_unix(const struct options *o, struct stat *bound, struct sbx_error *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", o->socket_path);
	if (lstat(o->socket_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-socket", "--socket: %s exists and is not a socket", o->socket_path);
			return -1;
		}
		unlink(o->socket_path); /* stale: we hold the alive lock */
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	mode_t old = umask(o->owner_gid >= 0 ? 0117 : 0177); /* 0660 for the owner's group */
	int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc == 0 && o->owner_uid >= 0 && chown(o->socket_path, (uid_t)o->owner_uid, (gid_t)o->owner_gid) != 0)
		rc = -1;
	if (rc != 0 || listen(fd, 1024) != 0 || lstat(o->socket_path, bound) != 0) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "socket", "--socket: %s: %s", o->socket_path, strerror(errno));
		if (rc == 0)
			unlink(o->socket_path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The socket's directory, so the unprivileged gateway still sees its
 * socket when a directory above is closed to it. */
static int open_socket_dir(struct options *o, struct sbx_error *e)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(o->socket_path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - o->socket_path) : 1, slash ? o->socket_path : ".");
	o->socket_name = slash ? slash + 1 : o->socket_path;
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	o->dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (o->dir_fd < 0 || !*o->socket_name) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-socket", "--socket: %s: %s", o->socket_path,
			      *o->socket_name ? strerror(errno) : "names a directory");
		return -1;
	}
	return 0;
}

/* Our socket was removed or replaced: nobody new can reach us. A socket we
 * may no longer look at is not gone. */
static bool socket_gone(const struct options *o, const struct stat *bound)
{
	struct stat st;
	if (fstatat(o->dir_fd, o->socket_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT || errno == ENOTDIR;
	return st.st_ino != bound->st_ino || st.st_dev != bound->st_dev;
}

struct job {
	struct gateway *g;
	int fd;
	struct admission ad;
};

/* A TCP stream, connected: all a bridge may hand over. */
static bool is_tcp_connection(int fd)
{
	int type = 0, domain = 0, listening = 1;
	socklen_t len = sizeof(int);
	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM &&
	       getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && (domain == AF_INET || domain == AF_INET6) &&
	       getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && !listening;
}

/* The first byte decides: a NUL carrying one TCP connection (SCM_RIGHTS)
 * is a bridge handing over its client, served in place of the Unix
 * connection; 0x01 a control request (control.c); anything else is the
 * first byte of an HTTP request. */
static void serve_connection(struct gateway *g, int uds, struct admission *ad)
{
	/* The marker is the start of the first head: within the head's time. */
	struct sbx_relay_limits lim = { .idle_ms = g->head_timeout_ms, .deadline_ms = ad->accepted_ms + g->head_timeout_ms };
	char first = 1; /* the marker byte a handover carries is NUL */
	struct iovec iov = { .iov_base = &first, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} control;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
			      .msg_controllen = sizeof(control.buf) };
	ssize_t n = -1;
	bool late = sbx_relay_wait(uds, POLLIN, &lim) != 0 && errno == ETIMEDOUT;
	if (!late)
		n = recvmsg(uds, &msg, MSG_CMSG_CLOEXEC);
	int passed[4], n_passed = 0;
	for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) && n_passed < 4; k++)
				memcpy(&passed[n_passed++], CMSG_DATA(c) + k * sizeof(int), sizeof(int));
	bool handover = n == 1 && first == '\0' && n_passed == 1 && !(msg.msg_flags & MSG_CTRUNC) &&
			is_tcp_connection(passed[0]) && fcntl(passed[0], F_SETFL, O_NONBLOCK) == 0;
	for (int k = handover ? 1 : 0; k < n_passed; k++)
		close(passed[k]);
	if (handover) {
		int one = 1;
		(void)setsockopt(passed[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* as upstream (relay.c) */
		close(uds);
		gateway_serve(g, passed[0], NULL, 0, ad);
	} else if (n == 1 && first == '\x01' && !n_passed) {
		control_serve(g, uds, ad, &lim);
	} else if ((n == 1 && first != '\0') || (late && ad->refuse)) {
		gateway_serve(g, uds, &first, n == 1 ? 1 : 0, ad); /* a refused one gets its 429 */
	} else {
		close(uds);
	}
}

static void *connection_thread(void *arg)
{
	struct job *j = arg;
	struct gateway *g = j->g;
	serve_connection(g, j->fd, &j->ad);
	peers_release(g, &j->ad);
	free(j);
	atomic_store(&g->last_activity_ms, sbx_monotonic_ms());
	return NULL;
}

/* Only our own uid, root, and the --socket-owner (its uid, or its group:
 * each workspace's uid shares the sandbox gid) may speak to us. */
static bool peer_allowed(const struct gateway *g, int fd, uid_t *uid, pid_t *pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return false;
	*uid = cred.uid;
	*pid = cred.pid; /* in our pid namespace: the audit's peerPid */
	return cred.uid == 0 || cred.uid == geteuid() || (g->peer_uid != (uid_t)-1 && cred.uid == g->peer_uid) ||
	       (g->peer_gid != (gid_t)-1 && cred.gid == g->peer_gid);
}

static void accept_one(struct gateway *g, int listener, pthread_attr_t *attr)
{
	int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	/* Admitted, or refused with a 429, by its peer's caps and the gateway's. */
	uid_t uid;
	pid_t pid;
	struct job *j = malloc(sizeof(*j));
	if (!j || !peer_allowed(g, fd, &uid, &pid) || !peers_admit(g, uid, pid, &j->ad)) {
		free(j);
		close(fd);
		return;
	}
	pthread_t t;
	atomic_store(&g->last_activity_ms, sbx_monotonic_ms());
	j->g = g;
	j->fd = fd;
	if (pthread_create(&t, attr, connection_thread, j) != 0) {
		peers_release(g, &j->ad);
		free(j);
		close(fd);
	}
}

/* Idle for long enough, and no run holds SOCKET.lock shared: exit, keeping
 * the lock until the socket is gone so no run sees a dying gateway. */
static int open_run_lock(const struct options *o)
{
	char lock_path[PATH_MAX];
	snprintf(lock_path, sizeof(lock_path), "%s.lock", o->socket_path);
	return open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
}

static bool idle_exit_now(struct gateway *g, struct options *o)
{
	if (!o->idle_exit_s || atomic_load(&g->active) > 0 ||
	    sbx_monotonic_ms() - atomic_load(&g->last_activity_ms) < o->idle_exit_s * 1000LL)
		return false;
	if (o->lock_fd < 0 && (o->lock_fd = open_run_lock(o)) < 0)
		return false;
	return flock(o->lock_fd, LOCK_EX | LOCK_NB) == 0; /* held until the process exits */
}

static void load_policy(struct gateway *g, const struct options *o)
{
	struct sbx_error e;
	json_t *doc = sbx_json_load(o->policy_path, 1u << 20, &e);
	if (!doc || sbx_egress_policy_parse(doc, &g->policy, &e) != 0)
		sbx_die(&e);
	json_decref(doc);
	if (o->proxy_url) {
		char why[300];
		if (upstream_parse(o->proxy_url, &g->proxy, why, sizeof(why)) != 0) {
			sbx_error_set(&e, SBX_EXIT_USAGE, "bad-proxy", "%s", why);
			sbx_die(&e);
		}
		g->via_proxy = true;
	}
}

static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int gateway_main(int argc, char **argv)
{
	static struct gateway g;
	struct options o = { .owner_uid = -1, .owner_gid = -1, .dir_fd = -1, .lock_fd = -1 };
	struct sbx_run_as who;
	struct sbx_error e;

	g.connect_timeout_ms = 10000;
	g.idle_ms = 300000;
	g.lifetime_ms = 3600 * 1000;
	g.max_tunnels = 1024;
	g.head_timeout_ms = 10000;
	g.peer_max_connections = 128;
	g.peer_max_heads = 32;
	g.log_fd = g.log_old_fd = -1;
	g.log_max_bytes = 4 << 20;
	g.refusal_interval_s = 10;
	g.refusal_burst = 5;
	pthread_mutex_init(&g.log_lock, NULL);
	pthread_mutex_init(&g.peers.lock, NULL);
	parse_options(argc, argv, &o, &g);
	g.peer_uid = o.owner_uid >= 0 ? (uid_t)o.owner_uid : (uid_t)-1;
	g.peer_gid = o.owner_gid >= 0 ? (gid_t)o.owner_gid : (gid_t)-1;
	g.control_uid = geteuid(); /* who started us: sbx-run, before any --drop-to */
	if (sbx_run_as_resolve(o.drop_to, &who, &e) != 0) {
		sbx_error_prefix(&e, "--drop-to");
		sbx_die(&e);
	}
	load_policy(&g, &o);
	/* The values are read while the store is still ours to read: after the
	 * drop they exist only in this process's locked memory. */
	static struct gw_secrets secrets;
	if (o.secrets.n_specs) {
		sbx_secret_json_cleansing(); /* jansson wipes what it frees: no stray copy of a value */
		if (gw_secrets_load(&secrets, &o.secrets, &e) != 0)
			sbx_die(&e);
		g.secrets = &secrets;
		g.intercept = intercept_session;
	}
	if (o.log_path && audit_open(&g, o.log_path, &e) != 0)
		sbx_die(&e);
	raise_fd_limit();
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL); /* threads inherit it: only the signalfd sees them */
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	struct stat bound;
	int listener = open_socket_dir(&o, &e) < 0 || hold_alive_lock(&o, &e) < 0 ? -1 : listen_unix(&o, &bound, &e);
	if (listener < 0)
		sbx_die(&e);
	/* Everything opened by name is open: from here on the gateway holds
	 * no privilege and no file it did not need. */
	o.lock_fd = open_run_lock(&o);
	if (gateway_confine(&who, &e) != 0) {
		unlinkat(o.dir_fd, o.socket_name, 0);
		sbx_die(&e);
	}
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	atomic_store(&g.last_activity_ms, sbx_monotonic_ms());
	if (o.ready_fd) {
		static const char ready[] = "ready\n";
		ssize_t w = write(o.ready_fd, ready, sizeof(ready) - 1);
		(void)w;
		close(o.ready_fd);
	}
	for (long long swept = sbx_monotonic_ms();;) {
		struct pollfd p[2] = { { .fd = listener, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
		int rc = poll(p, 2, 1000);
		if (rc < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN)
			accept_one(&g, listener, &attr);
		if (sbx_monotonic_ms() - swept >= 1000) {
			peers_sweep(&g, false);
			swept = sbx_monotonic_ms();
		}
		if (rc == 0 && atomic_load(&g.active) == 0 && socket_gone(&o, &bound))
			goto gone;
		if (rc == 0 && idle_exit_now(&g, &o))
			break;
	}
	/* Removed where we may: a dropped gateway cannot write a directory
	 * only root may, and the next gateway replaces the stale socket. */
	if (!socket_gone(&o, &bound))
		unlinkat(o.dir_fd, o.socket_name, 0);
gone:
	close(listener);
	peers_sweep(&g, true); /* the summaries of the intervals still open */
	return SBX_EXIT_OK;
}
