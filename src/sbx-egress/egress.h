/* egress.h — what sbx-egress's files share: the --resolve overrides, the
 * upstream route, the gateway's configuration and its per-connection work. */
#ifndef SBX_EGRESS_H
#define SBX_EGRESS_H

#include "../lib/egress_policy.h"
#include "../lib/relay.h"
#include "../lib/run_as.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_OVERRIDES 64
#define MAX_ANSWERS 8

/* --resolve NAME:PORT:ADDR[,ADDR]...[|ADDR[,ADDR]...]...: the name's
 * addresses, tried in order; '|' separates the answers of successive
 * lookups (the last repeats). Several entries for one NAME:PORT each add
 * their addresses to every answer. */
struct override {
	char name[254];
	int port;
	struct sockaddr_storage answers[MAX_ANSWERS];
	int n_answers;
	int set_end[MAX_ANSWERS]; /* answers[set_end[k-1] .. set_end[k]) is the k-th lookup's */
	int n_sets;
	atomic_int lookups;
};

struct overrides {
	struct override v[MAX_OVERRIDES];
	int n;
};

void overrides_add(struct overrides *o, const char *spec);
/* An sbx_egress_resolver: the overrides, DNS only for names they lack. */
int overrides_resolve(const char *host, int port, struct sockaddr_storage *out, int max, char *why, size_t size,
		      void *arg);

/* --upstream-proxy URL: an HTTP proxy every allowed connection goes through. */
struct upstream {
	char host[256];
	int port;
	char authorization[1024]; /* "Basic ..." or "" */
};

/* Parses http://[user[:password]@]host[:port][/]; the error never repeats
 * the credentials. */
int upstream_parse(const char *url, struct upstream *u, char *why, size_t size);
/* Connects to the proxy; -1 with errno (ETIMEDOUT when out of time). */
int upstream_connect(const struct upstream *u, const struct overrides *o, int timeout_ms);
/* CONNECT host:port through the proxy on fd. Bytes the proxy sent after its
 * 200 are left in extra (*extra_len). 0, or -1 with errno. */
int upstream_tunnel(int fd, const struct upstream *u, const char *host, int port, int timeout_ms, char *extra,
		    size_t extra_size, size_t *extra_len);

struct gateway {
	struct sbx_egress_policy policy;
	struct overrides resolve;
	struct upstream proxy;
	bool via_proxy;
	int connect_timeout_ms, idle_ms, lifetime_ms;
	int max_tunnels;
	uid_t peer_uid;              /* besides root and our own uid; -1: none */
	gid_t peer_gid;              /* a peer whose gid this is may speak too; -1: none */
	atomic_int active;
	atomic_llong last_activity_ms;
	int log_fd;                  /* -1: no audit log */
	pthread_mutex_t log_lock;
};

/* One audit line: a decision and, once the exchange ends, its byte counts. */
struct audit {
	long long started_ms;
	char method[24];
	char host[300];
	int port;
	char address[64];
	const char *decision;        /* "allowed", "denied", "malformed", "failed", "busy" */
	int status;
	char reason[600];
	uint64_t up, down;
};

void audit_write(struct gateway *g, const struct audit *a);

/* Serves one client connection (bytes it already sent first), then
 * closes it. */
void gateway_serve(struct gateway *g, int client, const char *sent, size_t sent_len);

/* Switches to who (when who->switch_user: bounding and ambient sets
 * cleared first), empties every capability set, sets no_new_privs and
 * non-dumpable, and loads the gateway's seccomp filter. Before any thread. */
int gateway_confine(const struct sbx_run_as *who, struct sbx_error *e);

int gateway_main(int argc, char **argv);
int check_main(int argc, char **argv);
int bridge_exec(int argc, char **argv);

#endif
