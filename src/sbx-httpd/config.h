/* config.h — sbx-httpd's configuration: every variable of runner-api 1.2
 * that applies, read and checked once at startup. */
#ifndef SBX_HTTPD_CONFIG_H
#define SBX_HTTPD_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

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
	long long sse_max_clients;   /* SBX_SSE_MAX_CLIENTS: event streams open at once; past it 503 */
	long long sse_keepalive_s;   /* SBX_SSE_KEEPALIVE_SECONDS: a comment on an idle stream this often */
	long long sse_max_s;         /* SBX_SSE_MAX_SECONDS: a stream ends after this ("end", reason lifetime) */
	char metrics_host[256];      /* SBX_METRICS_LISTEN: GET /metrics on its own listener too ("": none) */
	int metrics_port;
	bool metrics_no_auth;        /* SBX_METRICS_AUTH=none: that listener asks no bearer */
	char metrics_token[4096];    /* SBX_METRICS_TOKEN: that listener's bearer instead of the runner token ("": none) */
	size_t metrics_token_len;
	bool npu_broker;
	bool scientific_envs;
};

/* Reads and validates every variable of runner-api 1.2 that applies; a bad
 * value stops startup with a message naming the variable. */
void config_load(struct config *c);

#endif
