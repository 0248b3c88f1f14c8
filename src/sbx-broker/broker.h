/* broker.h — sbx-broker: allowlisted host workloads (npu.md 2). Jobs live
 * in one SQLite file; one drainer at a time (an flock) runs them in FIFO
 * order, each in its own process group, logs appended to files. */
#ifndef SBX_BROKER_H
#define SBX_BROKER_H

#include "../lib/error.h"

#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#define BROKER_LOG_BUDGET_DEFAULT (1ll << 30)
#define BROKER_INPUTS_MAX (64u << 10)
#define BROKER_CANCEL_GRACE_MS 2000
#define BROKER_JOB_PIDS 4096        /* processes of one job (its cgroup) */

struct broker {
	bool enabled;
	char data[PATH_MAX];     /* the data dir: workspaces live under <data>/projects */
	char dir[PATH_MAX];      /* <data>/npu-jobs: jobs.sqlite, logs/, runner.lock */
	char root[PATH_MAX];     /* what ${repo:...} resolves under */
	char config[PATH_MAX];   /* the allowlist */
	long long log_budget;    /* stdout + stderr of one job */
	json_t *workloads;       /* validated entries, in file order */
	sqlite3 *db;
};

/* allowlist.c */
int broker_load_allowlist(struct broker *b, struct sbx_error *e);
/* The same for a parsed document (b->config names it in errors). */
int broker_parse_allowlist(struct broker *b, const json_t *doc, struct sbx_error *e);
const json_t *broker_workload(const struct broker *b, const char *id);
json_t *broker_descriptor(const json_t *workload);
json_t *broker_capability(const struct broker *b);

/* job_records.c */
int broker_store_open(struct broker *b, struct sbx_error *e);
void broker_store_close(struct broker *b);
sqlite3_stmt *broker_sql(const struct broker *b, const char *sql);
/* The job as the API shows it; summary: logs and workspaceRoot blanked. */
json_t *broker_job_json(const struct broker *b, const char *id, bool summary);
bool broker_job_exists(const struct broker *b, const char *id);
int broker_set_state(const struct broker *b, const char *id, const char *state, const char *error,
		     const json_t *exit_code, const json_t *created_files);

/* environment.c: the managed interpreter of a revision and its site-packages. */
int broker_managed_python(const char *revision, char *python, char *site, size_t size, struct sbx_error *e);
/* The job's environment (npu.md 2.4) from a pass-list, HOME the job's
 * runner-owned home: NULL-terminated "K=V" strings. */
char **broker_job_environ(const char *workspace, const char *home, const char *site_packages);
void broker_free_environ(char **env);

/* job_home.c: who a job runs as (never root) and its runner-owned home. */
struct broker_job_ids {
	bool switch_ids; /* started as root: the job drops to uid/gid */
	uid_t uid;
	gid_t gid;
};
int broker_job_identity(const char *workspace, struct broker_job_ids *ids, struct sbx_error *e);
/* <dir>/homes/<id> (root, 0711) with inputs/ (root, 0755: the copies,
 * root-owned 0444), home/ and tmp/ (the job's uid, 0700). */
int broker_job_home(const struct broker *b, const char *id, const struct broker_job_ids *ids, char *home,
		    size_t size, struct sbx_error *e);
void broker_job_home_remove(const char *home);

/* template.c */
struct broker_template_ctx {
	const struct broker *b;
	const char *workload_id, *workspace, *revision;
	const json_t *inputs;
	const char *home;                  /* the job's home: inputs are copied there (NULL: checked only) */
	const struct broker_job_ids *ids;
};
/* REL opened once below the workspace's fd (O_NONBLOCK: a FIFO never
 * blocks), a regular file; its fd, or -1. */
int broker_open_input(const char *workspace, const char *rel, struct stat *st);
/* ${input:field}: the file opened below the workspace's fd and copied into
 * <home>/inputs/, whose path it returns (job_home.c). */
char *broker_input_copy(const struct broker_template_ctx *c, const char *field, struct sbx_error *e);
char *broker_expand(const struct broker_template_ctx *c, const char *text, struct sbx_error *e);
/* inputs[field]: a workspace-relative path resolving inside the workspace;
 * its realpath, or NULL with the upstream message. */
char *broker_workspace_input(const char *workload_id, const char *workspace, const json_t *inputs,
			     const char *field, struct sbx_error *e);

/* jobs.c */
json_t *broker_submit(struct broker *b, const json_t *req, struct sbx_error *e);
json_t *broker_cancel(struct broker *b, const char *id, const char *session, struct sbx_error *e);
/* The job if it exists and belongs to session (errors as npu.md 2.5 says). */
json_t *broker_owned(const struct broker *b, const char *id, const char *session, const char *unknown_code,
		     const char *unknown_message, struct sbx_error *e);

/* af3.c */
int broker_af3_check(const char *workspace, const json_t *inputs, const char *workload_id, struct sbx_error *e);

/* manifest.c */
json_t *broker_created_files(const char *workspace, const json_t *inputs);

/* drain.c */
int broker_drain(struct broker *b, struct sbx_error *e);
int broker_recover(struct broker *b, struct sbx_error *e);
/* Starts a detached drainer (for the command line; sbx-httpd runs its own). */
void broker_spawn_drainer(const struct broker *b);
/* Tells the drainer to look at its job's cancel flag. */
void broker_poke_drainer(const struct broker *b);

#endif
