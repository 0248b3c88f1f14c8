/* runner.h — one sbx-run child: started with its request on stdin, its
 * event lines read as they come, cancelled with SIGTERM, and its result
 * mapped onto the API's execution result. */
#ifndef SBX_HTTPD_RUNNER_H
#define SBX_HTTPD_RUNNER_H

#include "../lib/error.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define RUNNER_GRACE_MS 1000       /* sbx-run's --grace-ms */
#define RUNNER_REAP_MS 10000       /* from its finished event to its exit, at most */
#define RUNNER_KILL_GRACE_MS 5000  /* a SIGTERM sbx-run has not acted on by then is followed by SIGKILL */

struct child {
	char internal_id[40];        /* sbx-run's executionId (API ids may repeat) */
	char exec_dir[PATH_MAX + 64]; /* its state: stdout.txt, stderr.txt, result.json */
	pid_t pid;
	int events_fd, err_fd;
	bool started, cancel_sent, kill_sent;
	long long hard_deadline_ms;  /* monotonic: SIGTERM when sbx-run outlives timeout + grace (0: none) */
	long long kill_at_ms;        /* monotonic: SIGKILL after a SIGTERM it did not obey */
	json_t *result;              /* the finished event's result, or NULL */
	int finished_status;         /* the finished event's status (-1: none yet) */
	bool reaped;                 /* waited for; else runner_let_go reaps it */
	int exit_code;               /* sbx-run's status (sbx-formats(5) exit codes) */
	char diag[1024];             /* its last diagnostic message */
	/* Each event line as it is read (set after runner_start; NULL: none). */
	void (*on_event)(void *arg, const char *name, json_t *event);
	void *on_event_arg;
};

/* sbx-run ran the workload to its end, whatever the workload's own exit
 * (0, or 1: the workload failed); anything else is sbx-run's failure class. */
static inline bool runner_ran(const struct child *c)
{
	return c->exit_code == 0 || c->exit_code == 1;
}

/* Spawns sbx-run with the server's options (as a --standby or reading
 * its request from stdin), fds as its fds 3, 4, ...; dies with us. */
pid_t runner_spawn(bool standby, int stdin_fd, int stdout_fd, int stderr_fd, const int *fds, size_t n_fds,
		   struct sbx_error *e);
/* Starts sbx-run for request (its executionId is set here); fds become its
 * fds 3, 4, ... (the directories the request names as "fd:N"). */
int runner_start(json_t *request, const int *fds, size_t n_fds, struct child *c, struct sbx_error *e);
/* Reads events until sbx-run has exited. tick(arg) runs every 100 ms and at
 * the start; it returns true to cancel the run (SIGTERM, once). An sbx-run
 * still there RUNNER_KILL_GRACE_MS after its SIGTERM, or past its timeout
 * and grace, is killed (SIGKILL; its sandbox dies with it). */
void runner_wait(struct child *c, bool (*tick)(void *arg), void *arg);
void runner_free(struct child *c);
/* Once the result is delivered (a managed run's: recorded in SQLite), its
 * run directory goes, unless SCIENCE_AGENT_RUN_RETENTION_SECONDS keeps
 * run directories that long (each start then sweeps the older ones); the
 * run no longer counts as in flight. Every started run is let go once. */
void runner_forget(struct child *c);
/* At shutdown: no new run starts, every running sbx-run gets SIGTERM (it
 * stops its sandbox, removes its cgroups, reports "cancelled"), and this
 * waits up to wait_ms for all of them to be reaped. */
void runner_drain(int wait_ms);
/* sbx-run processes started and not yet let go. */
size_t runner_in_flight(void);
/* Removes run directories past the retention whose sbx-run is gone. */
void runner_sweep(void);
/* The same by its internal id and sbx-run's pid, for an answer already on
 * its way; one not yet reaped is reaped first (it said its status in the
 * finished event and only cleans up; SIGKILL after RUNNER_REAP_MS). */
void runner_let_go(const char *internal_id, pid_t pid, bool reaped);

/* What the API request asked for, as the result shows it. */
struct api_exec {
	char id[161];
	char session[256], agent[256];
	char language[8];            /* python | r | shell */
	char workspace[PATH_MAX];    /* display only: the fd's name when opened */
	unsigned long long ws_dev, ws_ino; /* the workspace itself, whatever names it */
	int fds[4];                  /* the workspace, an environment prefix, its read-only parent, a skill package */
	size_t n_fds;
	char skill_package[65];      /* the package fds[skill_slot] holds, "" none */
	size_t skill_slot;
	char env_revision[256];
	char env_id[64];             /* the environment whose prefix is mounted, "" none */
	const char *network_policy;  /* "none" | "domain-allowlist" */
	char network_revision[129]; /* the epoch's networkAccess.revision, or sbx's hash of the policy */
	bool network_revision_given; /* the epoch gave it */
	long long timeout_ms;
	char started_at[32];         /* when it left the queue ("" until then): the result's startedAt */
	long long queued_ms, started_ms, ended_ms; /* monotonic, for the metrics (0: not yet) */
	int start_exit;              /* why sbx-run did not run it (enum sbx_exit), 0 when it did */
};

/* ShellExecutionResult / PythonExecutionResult from sbx-run's result,
 * without stdout and stderr: they are read from the stream files. */
json_t *runner_api_result(const struct api_exec *x, json_t *result);
/* Opens the stream files sbx-run's result names (streams.stdout.path,
 * streams.stderr.path into fds[0], fds[1]) below the runs directory with
 * no symlink, each a regular file of the size the result reports; they
 * stay readable after runner_forget. -1 when either is missing or wrong. */
int runner_open_streams(const struct child *c, int fds[2]);
/* A stream file's text (invalid UTF-8 as U+FFFD) whose JSON is at most
 * cap bytes (NUL counts 6); *cut when more was there. */
json_t *runner_stream_text(int fd, size_t cap, bool *cut);

#endif
