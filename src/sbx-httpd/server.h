/* server.h — the state behind the endpoints: the configuration, the
 * programs sbx-httpd drives, the legacy executions /status lists, the
 * execution store. sbx-httpd holds no sandbox logic. */
#ifndef SBX_HTTPD_SERVER_H
#define SBX_HTTPD_SERVER_H

#include "config.h"

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

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
	char secrets[PATH_MAX];      /* sbx-secrets: the secret store */
	char snap[PATH_MAX];         /* sbx-snap: workspace histories */
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

#endif
