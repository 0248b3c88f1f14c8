/* run.h — the state of one supervised execution, shared by sbx-run's files:
 * main.c (the steps), supervise.c (the loop while the sandbox runs),
 * report.c (events and the result). */
#ifndef SBX_RUN_H
#define SBX_RUN_H

#include "worker.h"
#include "denials.h"
#include "egress_denials.h"
#include "seccomp_listen.h"
#include "../lib/cgroup_limits.h"
#include "event_sign.h"
#include "object_store.h"
#include "../lib/quota_watch.h"
#include "document.h"
#include "output.h"
#include "../lib/run_request.h"
#include "../lib/run_as.h"
#include "sandbox.h"
#include "speculative.h"
#include "../lib/snap_scan.h"
#include "../lib/snap_store.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Job mode: the run document and what has been uploaded (job.c). */
struct run_job {
	struct sbx_run_document doc;
	struct sbx_store store;
	long long started_ms;     /* sbx_mono_ms() at sbx-run's start: the platform deadline counts from it */
	long long terminated_ms;  /* the platform's SIGTERM (sbx_mono_ms), 0: none */
	long long end_ms;         /* when the uploads and the manifest must be done (sbx_mono_ms), 0: no bound */
	unsigned skipped;         /* reported items whose names cannot be keys */
	unsigned outputs_capped;  /* outputs past JOB_OUTPUTS_MAX, not sent */
	bool uploading;
	json_t *outputs, *media, *checkpoints; /* [{path, key, size, sha256}] uploaded */
	struct sbx_error failed;  /* the first upload that failed (exit_code 0: none) */
	bool manifest_refused;    /* the first manifest PUT failed: nothing ran */
};

struct run {
	struct sbx_run_request req;
	char state_dir[PATH_MAX];
	char exec_dir[PATH_MAX + 200];
	char staged[PATH_MAX + 64]; /* a standby's ready-made execution directory ("": none) */
	char store[PATH_MAX];     /* "" : no snapshot */
	struct sbx_snap_pin pin;  /* what this run stored that no ref reaches yet */
	uint64_t max_manifest;    /* --max-manifest-bytes */
	long gc_interval_s;       /* --gc-interval-s; -1: --no-gc */
	char launch[PATH_MAX];
	char egress_dir[PATH_MAX];  /* gateways by revision: <data dir>/eg */
#define RUN_MAX_RESOLVE 16
	const char *egress_resolve[RUN_MAX_RESOLVE]; /* --resolve for a gateway we start */
	char secrets_dir[PATH_MAX];   /* the secret store: <data dir>/secrets or --secrets-dir */
	const char *egress_upstream_ca; /* --egress-upstream-ca: trusted by a secret run's gateway */
	char secret_gateway_dir[PATH_MAX + 32]; /* this run's own gateway (secretRefs), "" none */
	pid_t secret_gateway;         /* its pid, 0 none */
	json_t *placeholders;         /* [{name, env, placeholder}] */
	long long platform_deadline_ms; /* the platform kills the job this long after start (0: none) */
	json_t *missing_caps;      /* [{capability, lost}] the run goes on without (capabilities.c) */
	struct sbx_signer signer;
	struct worker worker;
	struct run_denials denials; /* every refusal met (denials.c) */
	struct run_seccomp seccomp; /* the seccomp listener (seccomp_listen.c) */
	struct run_egress_watch egress_watch; /* the gateway's refusals of this run (egress_denials.c) */
	json_t *outputs;           /* the outputs manifest */
	json_t *provenance;        /* sbx-launch --dry-run: argv, env, cwd, ... */
	struct sbx_snap_scan before, after;
	struct sbx_output out;
	struct sbx_sandbox sb;
	struct sbx_cgroup cg;
	struct sbx_spawn_holder held; /* the sandbox's first process, forked at the start */
	struct sbx_error held_error;  /* why the cgroups or the hold failed (exit_code 0: they did not) */
	long long started_at_ms, finished_at_ms;
	long long started_mono_ms; /* sbx_mono_ms() when sbx-run started: a platform deadline counts from it */
	uint64_t quota_bytes;   /* the workspace's charged bytes at the last check */
	char quota_why[512];    /* which workspace limit was crossed (quota_hit) */
	enum sbx_quota_state quota_state; /* the last breach seen (FITS: none) */
	long setid_cleared;     /* set-uid/set-gid bits cleared after the run */
	long long workload_uid; /* the workspace's own uid (SBX_UID_RANGE), -1: the shared or caller's */
	long too_deep_removed;  /* directories past SBX_WORKSPACE_MAX_DEPTH, removed after the run */
	json_t *snapshot;          /* the sbx-snap receipt, or null */
	char error[1024];          /* the failure's message, "" when none */
	struct run_job *job;       /* job mode (--bootstrap, MAPI_BOOTSTRAP_URL), else NULL */
	struct run_speculative spec; /* a speculative run's overlay and pending change (speculative.c) */
	/* The 4-byte and 1-byte members last, together (no padding between). */
	unsigned keep_versions;   /* --keep-versions: the store's retention */
	int egress_idle_s;          /* a gateway nobody uses exits after this */
	int egress_lock_fd;         /* shared: our gateway stays while we run */
	int n_egress_resolve;
	int grace_ms;
	int reserve_ms;            /* SIGTERM this long before the platform deadline */
	int signal_fd;
	int lease_fd;
	int wait_status;
	int exit_code;             /* sbx-run's own status */
	bool stopped_for_platform; /* the platform deadline, not timeoutMs, ended the run */
	bool dev_mode;             /* not started as root: no uid separation */
	bool have_dac_override;    /* given: raised to make the cgroups */
	bool dac_override_held;    /* effective for the run: stands in for a missing dac_read_search */
	bool output_by_reference;  /* results name the stream files, never carry their text */
	bool transient;            /* the caller takes the finished event: no result.json, no launch-spec.json */
	bool ran, timed_out, cancelled, quota_hit, truncated, violated, exhausted;
	bool too_deep;          /* the workspace nested deeper than that during the run */
	bool keep_scratch;         /* job mode: the execution directory stays */
	bool no_seccomp_reports;   /* --no-seccomp-reports: the kernel refuses alone, nobody counts */
};

/* supervise.c: feeds the code, captures output, enforces deadline, quota
 * and cancel, and returns once the whole sandbox is gone. */
int run_supervise(struct run *r, struct sbx_error *e);
/* limit_denials.c: the limits that refused the run something (memory,
 * processes, file size, workspace bytes and files, output, time), each a
 * denial with its value, the knob that sets it and the remedy. */
void run_limit_denials(struct run *r);
/* supervise.c: the workspace's quota check (bytes, files, depth); over a
 * limit, quota_why names it ("exceeds" before the run, "exceeded" during). */
enum sbx_quota_state run_quota_check(struct run *r, bool during);

/* egress.c: a domain-allowlist run gets its revision's gateway (started
 * when none answers) and the spec's network names its socket. */
int run_egress_acquire(struct run *r, const struct sbx_run_as *who, struct sbx_error *e);
/* Waits (bounded) for a started gateway's "ready" on ready_fd (closed
 * here); false with the gateway's last diagnostic from err_path in line. */
bool run_gateway_ready(int ready_fd, bool started, const char *err_path, char *line, size_t size);
/* secretRefs (secret_gateway.c): placeholders in the spec's env and a gateway of
 * this run's own; released (its refusals as events) when the run ends. */
int run_secrets_acquire(struct run *r, const struct sbx_run_as *who, struct sbx_error *e);
void run_secrets_release(struct run *r);
/* devices.c: re-probes the requested chips and adds their fragment to the spec. */
int run_devices_attach(struct run *r, struct sbx_error *e);

/* capabilities.c: not dumpable; as root, the capabilities the run needs
 * among those given (what is lost is warned of and listed in
 * r->missing_caps); -1 with a remedy when an essential one is missing. */
int run_narrow_capabilities(struct run *r, struct sbx_error *e);

/* launch_hold.c: makes the cgroups for limits (named sbx-<pid>-<id>) and
 * forks the held first process; a failure waits in r->held_error. keep:
 * dac_override stays permitted for a standby's second try. */
void run_hold_launch(struct run *r, const char *id, const struct sbx_run_limits *limits, bool keep);
/* A standby's cgroups, kept when they hold the request's limits exactly,
 * else made again for them; dac_override is gone after. */
void run_adopt_launch(struct run *r);

/* commands.c: `sbx-run cancel DIR` and `sbx-run verify ...`. */
int run_cancel_command(const char *dir);
int run_verify_command(int argc, char **argv);
/* sweep.c: `sbx-run sweep STATE-DIR [--older-than S] [--max N]`. */
int run_sweep_command(int argc, char **argv);
/* commit.c: `sbx-run commit [--force] EXECUTION-DIR`, `sbx-run discard EXECUTION-DIR`. */
int run_commit_command(int argc, char **argv, bool commit);

/* standby.c: fds 3 .. 3 + STANDBY_FDS - 1 are placeholders while a
 * standby waits; the request's directories take their places. */
#define STANDBY_FDS 4
bool run_standby_placeholders(void);
/* The request from the socket on stdin (at most cap bytes, NUL-ended). */
char *run_standby_request(size_t cap, size_t *len, struct sbx_error *e);

/* job.c: the run document fetched, claimed, deleted and validated; the
 * execution request it holds, or NULL (e says why, with its class). */
json_t *run_job_bootstrap(struct run *r, const char *url, struct sbx_error *e);
/* The platform's SIGTERM: a timeout-class end; uploads get the reserve. */
void run_job_terminated(struct run *r);
/* The store's deadline from end_ms: a slice early for uploads, the end for the manifest. */
void run_job_set_deadline(struct run *r, bool for_manifest);
/* One output streamed up (rec: {path, key, size, sha256}). */
int run_job_output(struct run *r, int fd, const char *rel, uint64_t size, json_t **rec, struct sbx_error *e);
/* The media and checkpoints the worker reported, from the store. */
void run_job_upload_reported(struct run *r);
void run_job_free(struct run *r);
/* job_manifest.c: the signed manifest PUT; returns the exit status, made
 * infra (integrity) when results did not land, and marks result so. */
int run_job_manifest(struct run *r, json_t *result, int status);
/* Before the workload: a manifest marked running, which proves the grant
 * (a job killed outright leaves it saying so); -1: the job ends as infra. */
int run_job_manifest_start(struct run *r, struct sbx_error *e);

/* snapshot_upkeep.c: the store's defaults and options (--max-manifest-bytes 'M',
 * --keep-versions 'N', --gc-interval-s 'G', --no-gc 'Z');
 * the workspace committed to its ref (the receipt, or NULL); after the
 * run, its pins dropped, then a due collection of the store started
 * detached (never waited for). */
void run_store_defaults(struct run *r);
void run_store_option(struct run *r, int c, const char *arg);
json_t *run_commit_snapshot(struct run *r, struct sbx_error *e);
void run_collect_store(struct run *r);

/* usage.c: --help. */
void run_usage(FILE *out);

/* report.c */
long long run_now_ms(void);
void run_event(const char *event, struct run *r, json_t *extra);
json_t *run_result(struct run *r);
int run_write_result(struct run *r, json_t *result, struct sbx_error *e);

/* staging.c: the state directory (made, absolute), and a standby's
 * execution directory made while it waits. */
void run_settle_state_dir(struct run *r);
void run_record_supervisor(struct run *r);
/* launch-spec.json beside the result (not under --transient). */
int run_record_spec(struct run *r, struct sbx_error *e);
/* identity.c: who the workload runs as (SBX_RUN_AS set for sbx-launch). */
int run_workload_identity(struct run *r, const struct sbx_run_as *who, struct sbx_run_as *out, struct sbx_error *e);
void run_stage(struct run *r);
/* 1: the staged directory is now exec_dir; 0: none (make it); -1: the
 * execution id is taken (e says so). The staging goes either way. */
int run_take_stage(struct run *r, struct sbx_error *e);
void run_unstage(struct run *r);

/* detach.c: starts argv (argv[0] a path) in its own session, reparented
 * to init, fd 3 a copy of fd3, stderr appended to err_path, without
 * dac_override; idle: nice 19 and idle I/O. 0 once it is on its way. */
int run_detach(const char *const *argv, char *const *envp, const char *err_path, int fd3, bool idle);

#endif
