/* egress.h — what sbx-egress's files share: the --resolve overrides, the
 * upstream route, the gateway's configuration and its per-connection work. */
#ifndef SBX_EGRESS_H
#define SBX_EGRESS_H

#include "../lib/egress_policy.h"
#include "http_head.h"
#include "relay.h"
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

/* The gateway's peers (peers.c): one per SO_PEERCRED uid of a Unix
 * connection, created on its first connection, freed once it holds nothing. */
#define PEER_BUCKETS 1024
struct peer;
struct peers {
	pthread_mutex_t lock;
	struct peer *bucket[PEER_BUCKETS];
	int n;
	int tallies;                 /* (pid, target) refusal counts held by all peers */
};

struct conn;
struct audit;

struct gateway {
	struct sbx_egress_policy policy;
	struct overrides resolve;
	struct upstream proxy;
	bool via_proxy;
	int connect_timeout_ms, idle_ms, lifetime_ms, head_timeout_ms;
	int max_tunnels;             /* connections served at once, all peers */
	int peer_max_connections;    /* per peer */
	int peer_max_heads;          /* per peer: connections still sending a request head */
	uid_t peer_uid;              /* besides root and our own uid; -1: none */
	uid_t control_uid;           /* besides root, who may ask for a pid's counts (control.c) */
	gid_t peer_gid;              /* a peer whose gid this is may speak too; -1: none */
	atomic_int active;           /* connection threads, refusing ones too */
	atomic_int serving;          /* of them, those admitted to be served */
	atomic_llong last_activity_ms;
	struct peers peers;
	int log_fd;                  /* -1: no audit log */
	int log_old_fd;              /* FILE.1, the previous generation */
	long long log_max_bytes, log_size;
	int refusal_interval_s;      /* a peer's refusals are summarised per interval */
	int refusal_burst;           /* after this many logged whole in it */
	pthread_mutex_t log_lock;
	struct gw_secrets *secrets;  /* the run's secrets (secrets.h), or NULL */
	/* intercept_session when there are secrets: serve.c hands a CONNECT
	 * to a bound host over without naming intercept.c, which serves its
	 * requests through conn.c in turn. */
	void (*intercept)(struct conn *c, const struct sbx_egress_target *t, const struct sbx_egress_decision *d,
			  struct audit *a, char *rbuf, char *out);
};

/* One audit line: a decision and, once the exchange ends, its byte counts. */
struct audit {
	long long started_ms;
	uid_t peer;
	pid_t peer_pid;              /* SO_PEERCRED: a sandbox's bridge; 0 unknown */
	char method[24];
	char host[300];
	int port;
	char address[64];
	const char *decision;        /* "allowed", "denied", "malformed", "failed", "busy", "timeout" */
	const char *cause;           /* a denial's rule: "not-allowed", "unresolved", "special-address", "ip-literal" */
	bool intercepted;            /* a request inside an intercepted TLS session */
	char secret[64];             /* the secret a refusal is about, or "" */
	int status;
	char reason[600];
	uint64_t up, down;
};

/* A peer's refusals of one interval beyond those logged whole: of one
 * pid and target, or the rest past the peer's tallies. */
struct refusal_summary {
	uid_t peer;
	long long count, seconds;
	bool same;                   /* all of first's target and status */
	bool one_pid;                /* all of first's peer_pid */
	struct audit first;
};

/* Opens FILE (appending) and FILE.1 before the gateway gives up its
 * privilege; 0, or -1 with e naming the file. */
int audit_open(struct gateway *g, const char *path, struct sbx_error *e);
void audit_write(struct gateway *g, const struct audit *a);
void audit_write_summary(struct gateway *g, const struct refusal_summary *s);

/* What the accept loop decided for one connection, carried by its thread. */
struct admission {
	struct peer *peer;
	uid_t uid;
	pid_t pid;                   /* the connecting process (SO_PEERCRED) */
	bool refuse;                 /* answered 429 with reason, whatever it asks */
	bool head_pending;           /* counted among its peer's pending heads until its first came */
	long long accepted_ms;
	char reason[200];
};

/* Admits a connection of peer uid (process pid): to be served, or refused
 * with a 429 (ad->refuse); false: close it unanswered (far past every cap). */
bool peers_admit(struct gateway *g, uid_t uid, pid_t pid, struct admission *ad);
/* The connection's first request head has come (or never will). */
void peers_head_end(struct gateway *g, struct admission *ad);
/* The connection's thread ends: what it held is released. */
void peers_release(struct gateway *g, struct admission *ad);
/* Logs a refusal through its peer's rate limit. */
void peers_refused(struct gateway *g, struct admission *ad, const struct audit *a);
/* Writes the summaries of ended intervals (every one when flush) and
 * frees peers that hold nothing. The accept loop's thread only. */
void peers_sweep(struct gateway *g, bool flush);
/* Writes now the counts held for pid's refusals (its tallies, and the
 * rest when all of it is pid's): the run that pid served has ended. */
void peers_flush_pid(struct gateway *g, pid_t pid);
/* A trusted peer's control request (the byte 0x01 came first) on uds,
 * which it closes: control.c. */
void control_serve(struct gateway *g, int uds, const struct admission *ad, const struct sbx_relay_limits *lim);

/* A client connection being served (conn.c, serve.c). */
#define BUF_CAP (SBX_HTTP_HEAD_MAX + 16 * 1024)
#define OUT_CAP (SBX_HTTP_HEAD_MAX + 8 * 1024)

/* An intercepted CONNECT (intercept.c): every request inside its TLS
 * session goes to this target, over the gateway's own TLS session. */
struct pinned {
	struct sbx_egress_target t;
	struct sbx_egress_decision d;
	int up;         /* the plain end of the upstream session; -1: none open */
	/* serve_pinned: how conn.c serves each request inside the session. */
	bool (*serve)(struct conn *c, const struct sbx_http_head *h, struct audit *a, char *rbuf, char *out);
};

struct conn {
	struct gateway *g;
	int client;
	char *buf;      /* client bytes still unused: a head and what follows it */
	size_t len;
	struct sbx_relay_limits head; /* for the request head being read */
	struct admission *ad;
	struct pinned *pinned; /* inside an intercepted session, or NULL */
};

/* Sends a refusal, logs it through the peer's rate limit, and drains what
 * the client pipelined (for a moment) so it reads the answer, not a reset. */
void conn_refuse(struct conn *c, struct audit *a, const char *decision, int status, const char *reason);
/* One CONNECT (the connection ends with it), or one absolute-form request:
 * true when the connection may carry another. rbuf and out: BUF_CAP and
 * OUT_CAP bytes. */
void serve_connect(struct conn *c, const struct sbx_http_head *h, struct audit *a, char *rbuf, char *out);
bool serve_absolute(struct conn *c, const struct sbx_http_head *h, struct audit *a, char *rbuf, char *out);

/* Drops the first n of *len bytes of buf. */
void buf_consume(char *buf, size_t *len, size_t n);

/* The upstream connection for a vetted decision (through the upstream
 * proxy's CONNECT when there is one): the socket, or -1 with the refusal
 * sent. */
int serve_open_upstream(struct conn *c, const struct sbx_egress_decision *d, const struct sbx_egress_target *t,
			struct audit *a, char *extra, size_t extra_size, size_t *extra_len);
/* With secrets: reads the start of the request's body (up to 8 KiB) behind
 * its head in c->buf and refuses (false) a misplaced placeholder in either,
 * or a body that does not come within the head time. host NULL: no
 * placeholder may pass (plain HTTP). *expect is answered here. */
bool serve_screen(struct conn *c, const struct sbx_http_head *h, enum sbx_http_body kind, uint64_t length,
		  bool *expect, const char *host, int port, struct audit *a);
/* One exchange over an open upstream: the request head (out, n) and its
 * body to up, the response back to the client (masked for mask_host).
 * True when the client connection may carry another; *up_again when the
 * upstream connection may too. */
struct exchange {
	enum sbx_http_body req_kind;
	uint64_t req_length;
	bool expect, head_request, client_10, keep_alive;
	const struct sbx_egress_target *t;
	bool mask;
	bool up_again;
};
bool serve_exchange(struct conn *c, int up, struct exchange *x, struct audit *a, char *rbuf, char *out, size_t n);
/* masked_body.c: a response body from a secret's host, its first *len
 * bytes in buf, the rest read from `from`, with each bound value starred
 * out on its way; afterwards buf holds what followed the body. */
int serve_forward_masked(int from, int to, char *buf, size_t *len, size_t cap, enum sbx_http_body kind,
			 uint64_t length, const struct sbx_relay_limits *lim, uint64_t *moved,
			 const struct gw_secrets *s, const char *host, int port);

/* The requests of a connection, each head within its time, until it ends
 * (first: the first head's time runs from the accept). */
void conn_serve(struct conn *c, char *rbuf, char *out, bool first);
/* A CONNECT to a host a secret is bound to (its head consumed). */
void intercept_session(struct conn *c, const struct sbx_egress_target *t, const struct sbx_egress_decision *d,
		       struct audit *a, char *rbuf, char *out);
/* One origin-form request inside an intercepted session. */
bool serve_pinned(struct conn *c, const struct sbx_http_head *h, struct audit *a, char *rbuf, char *out);

/* Serves one client connection (bytes it already sent first), then
 * closes it. */
void gateway_serve(struct gateway *g, int client, const char *sent, size_t sent_len, struct admission *ad);

/* Switches to who (when who->switch_user: bounding and ambient sets
 * cleared first), empties every capability set, sets no_new_privs and
 * non-dumpable, and loads the gateway's seccomp filter. Before any thread. */
int gateway_confine(const struct sbx_run_as *who, struct sbx_error *e);

int gateway_main(int argc, char **argv);
int check_main(int argc, char **argv);
int bridge_exec(int argc, char **argv);

#endif
