/* httpd.h — what sbx-httpd's files share: the configuration, the request
 * being answered, the reply helpers, and the state behind the endpoints.
 * sbx-httpd holds no sandbox logic: every execution is an sbx-run child. */
#ifndef SBX_HTTPD_H
#define SBX_HTTPD_H

#include "../lib/clock.h"
#include "../lib/hash.h"

#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define BODY_LIMIT 2000000
#define SKILL_BODY_LIMIT (64u << 20)

struct config {
	char host[256];
	int port;
	char socket_path[108];       /* "": TCP */
	char token[4096];
	size_t token_len;
	char data_dir[PATH_MAX];     /* absolute */
	char bwrap[PATH_MAX];
	long long exec_timeout_ms;
	long long run_retention_s;   /* SCIENCE_AGENT_RUN_RETENTION_SECONDS: run directories kept after delivery */
	long long max_output_bytes;
	long long max_workspace_bytes;
	long long max_workspace_files; /* SCIENCE_AGENT_MAX_WORKSPACE_FILES: names below a workspace, 0 none */
	long long signature_max_age_ms;
	long long max_connections;   /* SCIENCE_AGENT_MAX_CONNECTIONS: open at once; past it a request gets 503 */
	long long max_requests;      /* SCIENCE_AGENT_MAX_REQUESTS: answered (or queued) at once; past it 503 */
	long long warm_runners;      /* SBX_WARM_RUNNERS: sbx-run --standby kept ready (0: none) */
	long long exec_retention_s;  /* SCIENCE_AGENT_EXECUTION_RETENTION_SECONDS: finished managed records kept (0: no age limit) */
	long long exec_log_max_bytes; /* SCIENCE_AGENT_EXECUTION_LOG_MAX_BYTES: their logs and results in all (0: no cap) */
	long long snapshot_keep;     /* SCIENCE_AGENT_REMOTE_SNAPSHOT_KEEP: remote snapshots kept per workspace key (0: all) */
	long long snapshot_grace_s;  /* SCIENCE_AGENT_REMOTE_SNAPSHOT_GRACE_SECONDS: an unreferenced object younger stays */
	bool npu_broker;
	bool scientific_envs;
};

/* Reads and validates every variable of runner-api 1.2 that applies; a bad
 * value stops startup with a message naming the variable. */
void config_load(struct config *c);
/* data_reach.c: as root, warns at startup when a directory above the data
 * dir is not searchable by the workspaces' uids (NPU broker jobs need it). */
void httpd_check_data_reach(const char *data_dir, gid_t sandbox_gid);

/* The programs sbx-httpd drives, found next to it. */
struct programs {
	char run[PATH_MAX];
	char egress[PATH_MAX];
	char bridge[PATH_MAX];
	char env[PATH_MAX];
	char broker[PATH_MAX];       /* "": not installed */
	char npu[PATH_MAX];          /* "": not installed */
	char ws[PATH_MAX];           /* sbx-ws: the remote workspaces */
	char skills[PATH_MAX];
};

/* One legacy execution as /status lists it. */
struct active {
	char execution_id[161], session_id[256], agent_id[256], language[8];
	char queued_at[32], started_at[32];
	bool running;
	struct active *next;
};

struct server {
	struct config cfg;
	struct programs prog;
	char version[32];            /* runnerVersion */
	char execution_user[64];    /* the workload's user name (its uid when it has none) */
	uid_t execution_uid;	    /* what sbx-run runs the workload as */
	gid_t execution_gid;
	uid_t workspace_uid_first;  /* each workspace its own uid from here (count 0: off) */
	uint32_t workspace_uid_count;
	json_t *supervisor_caps;     /* {missing: [{capability, lost}], error: string|null} as root, else null */
	bool network_available;
	char network_reason[256];
	pthread_mutex_t lock;        /* active, seen ids, managed bookkeeping */
	pthread_cond_t active_changed;
	struct active *active;
	json_t *seen_ids;            /* executionId -> first-seen ms (60 s window) */
	sqlite3 *db;
	pthread_mutex_t db_lock;
	struct managed_run *managed; /* running or queued managed executions */
};

extern struct server g_server;

/* A reply made on a request's own thread, queued by the connection's
 * poll thread once the connection is resumed (connections.c). */
struct reply_slot {
	unsigned status;
	struct MHD_Response *resp;
};

/* One request, its body read whole (or refused as too large). */
struct req {
	struct MHD_Connection *conn;
	const char *method, *path;
	char *body;
	size_t len;
	bool too_large;
	struct upload *upload;       /* PUT /remote-workspace/(transfer-)file */
	struct reply_slot *slot;     /* NULL: queue the reply at once */
	char run_done[40];           /* a handler's run, let go once its answer is on its way */
	int run_done_pid;            /* and its sbx-run */
	bool run_done_reaped;        /* already waited for */
};

/* upload.c: a PUT body streamed to a staging file as it arrives, hashed on
 * the way; never held in memory. Refusals known from the head are kept
 * and the body is read on and dropped. */
struct upload {
	int fd;                      /* the staging file, -1 when refused */
	char tmp[PATH_MAX];          /* its name, removed when the request ends */
	struct sbx_sha256 *sha;
	unsigned long long bytes, cap; /* cap 0: none */
	unsigned long long written_back; /* bytes the disk was asked to write */
	bool over;                   /* more than cap arrived */
	bool verified;               /* transfer-file */
	int write_errno;
	unsigned status;             /* a refusal decided from the head */
	char error[600];
};
bool upload_wanted(const char *method, const char *url);
struct upload *upload_begin(struct MHD_Connection *conn, const char *url);
void upload_write(struct upload *u, const char *data, size_t n);
void upload_free(struct upload *u);
/* The checks both the head and the end apply: workspace key, path, conflict
 * and, verified, the metadata headers. 0, or the status with msg. */
unsigned upload_check(struct MHD_Connection *conn, bool verified, char *msg, size_t msize);
/* x-workspace-executable: bits within 0o111 (absent: 0; "true"/"false" too), or -1. */
long upload_exec_bits(const char *header);

/* Replies. Every body is compact JSON plus a newline with the spec's
 * headers; errors are {"error": message}. */
enum MHD_Result reply_json(struct req *r, unsigned status, json_t *body);
enum MHD_Result reply_error(struct req *r, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *query(struct req *r, const char *name);
size_t request_body_limit(struct req *r);
size_t body_limit(const char *method, const char *url);
/* Queues resp (then released) with the spec's headers and this type. */
enum MHD_Result reply_response(struct req *r, unsigned status, struct MHD_Response *resp, const char *type);
/* Raw bytes from fd (closed when sent), application/octet-stream. */
enum MHD_Result reply_file(struct req *r, int fd, off_t size);
const char *header(struct req *r, const char *name);
/* The JSON body (an object), or NULL after a 400 was sent. */
json_t *body_object(struct req *r, enum MHD_Result *sent);
/* The same for a signed endpoint: a too-large body (400), then the
 * signature (401 with `refusal`), then the JSON. */
json_t *signed_body(struct req *r, const char *refusal, enum MHD_Result *sent);
/* Whether the client has gone (its socket closed). */
bool client_gone(struct req *r);

/* auth.c */
bool auth_bearer(const struct config *c, struct req *r);
bool auth_signature(const struct config *c, struct req *r);

/* environments.c: sbx-env behind the environment endpoints. */
enum MHD_Result handle_environments(struct req *r, const char *id, const char *action);
json_t *environments_capability(void);
void environments_start_setup(void);
/* selector "--revision" or "--environment" with its id (NULL: the starter). */
int environments_resolve(const char *selector, const char *id, const char *language, char *prefix, size_t size,
			 char *revision, size_t rsize, char *env_id, size_t esize, char *msg, size_t msize);
/* A shared lock on the environment for the run's duration (-1: none). */
int environments_lease(const char *env_id);

/* connections.c: the poll threads, a thread per request being answered.
 * A connection silent CONNECTION_IDLE_S (headers, body, keep-alive) is
 * closed; a request being answered is suspended, never idle. */
#define CONNECTION_IDLE_S 30
struct MHD_Daemon *server_start(int listen_fd);
/* head_deadline.c: a head not whole within CONNECTION_IDLE_S is cut. */
void head_watch_open(struct MHD_Connection *conn, void **socket_context);
void head_watch_close(void *socket_context);
void head_watch_mark(struct MHD_Connection *conn, bool in_head);
void head_watch_start(void);
unsigned connections_needed_fds(void);

/* Endpoints. */
enum MHD_Result route(struct req *r);
enum MHD_Result handle_health(struct req *r);
void info_limits_init(void);
/* Who the workloads run as (the execution_* fields), once at startup. */
void info_execution_identity(struct server *s);
enum MHD_Result handle_status(struct req *r);
enum MHD_Result handle_resources(struct req *r);
enum MHD_Result handle_kernels(struct req *r, const char *kernel_id);
/* remote.c: remote workspaces (runner-api 5.7) as sbx-ws children. */
enum MHD_Result handle_remote(struct req *r, const char *what, const char *id);
/* One collection of the remote snapshot store (sbx-ws collect) with the
 * configured keep and grace; 0 with its counts, or -1 (a warning logged). */
int remote_snapshots_collect(long long *manifests, long long *objects, long long *next_due_ms);
/* skills_call.c: skill packages, sbx-skills' store. */
enum MHD_Result handle_skills(struct req *r, const char *id);
/* The package at root (<data>/skill-packages/<id>) as an O_RDONLY
 * directory fd that sbx-skills verified against its id (the id into id);
 * -1 when not held, -2 when it fails its integrity check. */
int skills_open_held(const char *root, char id[65]);
/* sbx-skills verify on an fd skills_open_held gave: 0, -1 not held, -2
 * failed its integrity check. */
int skills_verify_fd(int pkg, const char *id);

/* npu.c: sbx-broker and sbx-npu behind the NPU endpoints. */
void npu_start(void);
json_t *npu_capability(void);
json_t *npu_active_jobs(void);
enum MHD_Result handle_npu(struct req *r, const char *what, const char *id);
enum MHD_Result handle_execute(struct req *r, bool shell);
enum MHD_Result handle_managed_start(struct req *r);
enum MHD_Result handle_managed_get(struct req *r, const char *id);
enum MHD_Result handle_managed_logs(struct req *r, const char *id);
enum MHD_Result handle_managed_cancel(struct req *r, const char *id);


#endif
