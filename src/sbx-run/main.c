/* sbx-run — the trusted supervisor of one execution: validate the request,
 * take the workspace lease, check the quota, run the sandbox (sbx-launch)
 * under deadline, quota and cancel, capture its output, snapshot the
 * workspace, and report. `sbx-run cancel DIR` stops a running execution. */
#include "run.h"
#include "../lib/program_path.h"
#include "../lib/atomic_file.h"
#include "../lib/cli.h"
#include "../lib/clock.h"
#include "../lib/datadir.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/launch_spec.h"
#include "../lib/quota.h"
#include "../lib/quota_watch.h"
#include "../lib/run_as.h"
#include "../lib/workspace_lease.h"
#include "../lib/snap_store.h"
#include "../lib/spawn.h"
#include "../lib/tree_remove.h"
#include "../lib/workspace_owner.h"
#include "../lib/workspace_uid.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#define REQUEST_CAP (32u << 20)


/* What a standby made while waiting: its directory, held process, cgroups. */
static void release_standby(struct run *r)
{
	run_unstage(r);
	sbx_spawn_discard(&r->held);
	sbx_cgroup_remove(&r->cg);
}

/* Refused before the run began: nothing made for it stays. */
static _Noreturn void refuse(struct run *r, const struct sbx_error *e)
{
	release_standby(r);
	sbx_die(e);
}

/* The signals that stop a run: SIGTERM, SIGINT, SIGHUP. */
static sigset_t stop_signals(void)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	return mask;
}

static volatile sig_atomic_t cancel_requested;

static void note_cancel(int sig)
{
	(void)sig;
	cancel_requested = 1;
}

static bool was_cancelled(void)
{
	return cancel_requested != 0;
}

/* While queued, SIGTERM, SIGINT and SIGHUP interrupt the lease wait (no
 * SA_RESTART); once running they are read from the signalfd again. */
static void on_queued(void *arg)
{
	struct run *r = arg;
	struct sigaction sa = { .sa_handler = note_cancel };
	sigset_t mask = stop_signals();
	run_event("queued", r, json_pack("{s:s}", "workspace", r->req.workspace));
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigprocmask(SIG_UNBLOCK, &mask, NULL);
}

/* Ends the run with a failure that happened before or around the sandbox. */
static int fail(struct run *r, const struct sbx_error *e)
{
	r->exit_code = e->exit_code ? e->exit_code : SBX_EXIT_INTERNAL;
	snprintf(r->error, sizeof(r->error), "%s", e->message);
	if (!r->finished_at_ms)
		r->finished_at_ms = run_now_ms();
	return r->exit_code;
}

static int execute(struct run *r, struct sbx_error *e)
{
	bool queued;

	r->lease_fd = sbx_lease_take(r->state_dir, r->req.ws.fd, on_queued, r, was_cancelled, &queued, e);
	if (queued) {
		sigset_t mask = stop_signals();
		sigprocmask(SIG_BLOCK, &mask, NULL);
		if (r->lease_fd >= 0 && was_cancelled() && r->job) {
			run_job_terminated(r);
			r->timed_out = r->stopped_for_platform = true;
			sbx_error_set(e, SBX_EXIT_TIMEOUT, "platform-terminated", "stopped by the platform (SIGTERM) while waiting for the workspace lease");
			return fail(r, e);
		}
		if (r->lease_fd >= 0 && was_cancelled()) {
			sbx_error_set(e, SBX_EXIT_CANCELLED, "cancelled", "cancelled while waiting for the workspace lease");
			r->cancelled = true;
			return fail(r, e);
		}
	}
	if (r->lease_fd < 0) {
		r->cancelled = e->exit_code == SBX_EXIT_CANCELLED;
		return fail(r, e);
	}
	r->started_at_ms = run_now_ms();
	if (sbx_quota_over(run_quota_check(r, false))) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "quota-exceeded", "%s", r->quota_why);
		return fail(r, e);
	}
	if (r->spec.dir >= 0)
		run_speculative_measure(r);
	/* No single file may outgrow what is left of the quota by more than a
	 * byte (the quota charges a file at least its size, so crossing it
	 * still reads as crossing it): one fallocate cannot overshoot it
	 * between two checks. */
	if (r->req.max_workspace_bytes)
		json_object_set_new(r->req.spec, "fileSizeLimitBytes",
				    json_integer((json_int_t)(r->req.max_workspace_bytes - r->quota_bytes) + 1));
	if (r->held_error.exit_code) /* the cgroups or the held launch, made at the start */
		return fail(r, &r->held_error);
	/* No cgroup to hold the memory bound: the address space stands in. */
	if (r->cg.mode == SBX_CGROUP_NONE && r->req.limits.memory_bytes > 0)
		json_object_set_new(r->req.spec, "maxAddressSpaceBytes",
				    json_integer((json_int_t)(r->req.limits.memory_bytes > SBX_ADDRESS_SPACE_MIN
								  ? r->req.limits.memory_bytes : SBX_ADDRESS_SPACE_MIN)));
	if (run_devices_attach(r, e) != 0)
		return fail(r, e);
	if (!r->no_seccomp_reports)
		run_seccomp_open(&r->seccomp);
	run_egress_watch_start(r);
	if (sbx_snap_scan_at(r->req.ws.fd, &r->before, e) != 0 ||
	    sbx_output_open(&r->out, r->exec_dir, r->req.max_output_bytes, e) != 0 ||
	    sbx_sandbox_start(r->launch, r->req.spec, &r->held, r->worker.sandbox_end, r->seccomp.sandbox_end, &r->sb,
			      e) != 0)
		return fail(r, e);
	close(r->worker.sandbox_end);
	r->worker.sandbox_end = -1;
	if (r->seccomp.sandbox_end >= 0) {
		close(r->seccomp.sandbox_end);
		r->seccomp.sandbox_end = -1;
	}
	r->provenance = sbx_sandbox_plan(&r->sb);
	r->ran = true;
	run_event("started", r, json_pack("{s:i}", "sandboxPid", (int)r->sb.pid));
	worker_send_start(r);
	int supervised = run_supervise(r, e);
	r->finished_at_ms = run_now_ms();
	/* No set-uid file outlives the run, whatever ended it (the sandbox is
	 * gone: nothing of this run can race the walk). */
	struct sbx_error setid_error;
	/* A speculative run's workspace is as it was: its changes are checked. */
	long cleared = r->spec.dir >= 0 ? sbx_workspace_clear_setid(r->spec.upper, "speculative changes", &r->too_deep_removed,
								     &setid_error)
					: sbx_workspace_clear_setid(r->req.ws.fd, r->req.workspace, &r->too_deep_removed,
								     &setid_error);
	if (r->too_deep_removed > 0)
		r->too_deep = true;
	r->setid_cleared = cleared > 0 ? cleared : 0;
	sbx_cgroup_remove(&r->cg);
	if (sbx_output_finish(&r->out, &r->truncated, e) != 0 || supervised != 0)
		return fail(r, e);
	bool stopped = r->timed_out || r->cancelled || r->quota_hit || r->too_deep || r->exhausted ||
		       r->worker.outcome != WORKER_OK;
	bool setup_failed = r->sb.init_pid && !stopped && WIFEXITED(r->wait_status) && WEXITSTATUS(r->wait_status) != 0 &&
			    !sbx_sandbox_exit_reported(&r->sb);
	if (setup_failed) {
		/* bwrap gave up before the workload ran (a bind that lost a race
		 * with a rename, a source gone): its message is bwrap's last line. */
		char line[1024] = "", *text;
		size_t len;
		if ((text = sbx_read_file_capped(r->out.s[1].path, 1u << 20, &len, e))) {
			sbx_last_line(text, line, sizeof(line));
			free(text);
		}
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "sandbox-setup-failed", "the sandbox did not start: %s",
			      line[0] ? line : "bwrap failed before the workload ran");
		r->ran = false;
		return fail(r, e);
	}
	if (!r->sb.init_pid) {
		/* bwrap never reported a sandbox: sbx-launch refused, say why. */
		char line[1024] = "", *text;
		size_t len;
		if ((text = sbx_read_file_capped(r->out.s[1].path, 1u << 20, &len, e))) {
			sbx_last_line(text, line, sizeof(line));
			free(text);
		}
		json_t *diag = json_loads(line, 0, NULL);
		/* sbx-launch's own status says what kind of refusal it was. */
		int code = WIFEXITED(r->wait_status) ? WEXITSTATUS(r->wait_status) : 0;
		sbx_error_set(e, code >= 2 && code <= 9 ? code : SBX_EXIT_NO_SANDBOX,
			      sbx_json_string_or(diag, "code", "launch-failed"), "the sandbox did not start: %s",
			      sbx_json_string_or(diag, "message", line[0] ? line : "sbx-launch failed"));
		json_decref(diag);
		r->ran = false;
		return fail(r, e);
	}
	worker_read(r); /* what the worker said last */
	if (!stopped)
		worker_expect_terminal(r);
	worker_tick(r, true);
	r->outputs = worker_outputs(r);
	if (r->worker.outcome != WORKER_OK) {
		r->violated = r->worker.outcome == WORKER_VIOLATION;
		r->exhausted = !r->violated;
	}
	if (cleared < 0) {
		snprintf(e->message, sizeof(e->message), "clearing set-id bits after the run: %.900s", setid_error.message);
		snprintf(e->code, sizeof(e->code), "%s", setid_error.code);
		e->exit_code = SBX_EXIT_INTERNAL;
		return fail(r, e);
	}
	if (sbx_snap_scan_at(r->req.ws.fd, &r->after, e) != 0)
		return fail(r, e);
	if (r->violated) {
		sbx_error_set(e, SBX_EXIT_VIOLATION, "sandbox-violation", "%s", r->worker.why);
		fail(r, e);
	} else if (r->exhausted) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "resource-exhausted", "%s", r->worker.why);
		fail(r, e);
	} else if (r->too_deep) {
		sbx_error_set(e, SBX_EXIT_RESOURCE, "workspace-too-deep",
			      "Workspace directories were nested deeper than %d levels; what lay deeper was removed",
			      SBX_WORKSPACE_MAX_DEPTH);
		fail(r, e);
	} else if (r->quota_hit || sbx_quota_over(run_quota_check(r, true))) {
		r->quota_hit = true;
		sbx_error_set(e, SBX_EXIT_RESOURCE, "quota-exceeded", "%s", r->quota_why);
		fail(r, e);
	} else if (r->timed_out) {
		if (r->job && r->job->terminated_ms)
			sbx_error_set(e, SBX_EXIT_TIMEOUT, "platform-terminated",
				      "%s execution stopped by the platform (SIGTERM); what it left is uploaded within the reserve",
				      sbx_run_language_title(r->req.language));
		else if (r->stopped_for_platform)
			sbx_error_set(e, SBX_EXIT_TIMEOUT, "platform-deadline",
				      "%s execution stopped %d ms before the platform deadline of %lld ms",
				      sbx_run_language_title(r->req.language), r->reserve_ms, r->platform_deadline_ms);
		else
			sbx_error_set(e, SBX_EXIT_TIMEOUT, "timeout", "%s execution timed out after %lld ms",
				      sbx_run_language_title(r->req.language), r->req.timeout_ms);
		fail(r, e);
	} else if (r->cancelled) {
		sbx_error_set(e, SBX_EXIT_CANCELLED, "cancelled", "%s execution aborted",
			      sbx_run_language_title(r->req.language));
		fail(r, e);
	}
	/* An over-quota tree is not stored (the disk would hold it twice): the
	 * workspace's ref keeps its previous snapshot. */
	struct sbx_error se;
	if (r->store[0] && !r->quota_hit && !(r->snapshot = run_commit_snapshot(r, &se)) && !r->exit_code)
		return fail(r, &se);
	return r->exit_code;
}

/* The directory an option names, else the data directory's area; a path
 * too long is a usage error naming the option. */
static void area_dir(const char *given, enum sbx_data_area area, const char *option, char *out, size_t size)
{
	char data[PATH_MAX], why[80];
	int n = given ? snprintf(out, size, "%s", given)
		      : sbx_data_dir(data, sizeof(data)) == 0 && sbx_data_path(data, area, NULL, out, size) == 0
				? (int)strlen(out)
				: -1;
	if (n < 0 || (size_t)n >= size) {
		snprintf(why, sizeof(why), "%s: path too long", option);
		sbx_cli_usage_error("sbx-run", why);
	}
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "snapshot-store", required_argument, NULL, 'S' },
		{ "no-snapshot", no_argument, NULL, 'n' },
		{ "output-by-reference", no_argument, NULL, 'O' },
		{ "standby", no_argument, NULL, 'W' },
		{ "transient", no_argument, NULL, 'T' },
		{ "grace-ms", required_argument, NULL, 'g' },
		{ "deadline-reserve-ms", required_argument, NULL, 'R' },
		{ "platform-deadline-ms", required_argument, NULL, 'P' },
		{ "deadline-ms", required_argument, NULL, 'P' },
		{ "bootstrap", required_argument, NULL, 'B' },
		{ "keep-scratch", no_argument, NULL, 'X' },
		{ "signing-key-fd", required_argument, NULL, 'k' },
		{ "signing-key-file", required_argument, NULL, 'K' },
		{ "egress-dir", required_argument, NULL, 'E' },
		{ "egress-idle-s", required_argument, NULL, 'I' },
		{ "egress-resolve", required_argument, NULL, 'D' },
		{ "egress-upstream-ca", required_argument, NULL, 'U' },
		{ "secrets-dir", required_argument, NULL, 'Y' },
		{ "max-manifest-bytes", required_argument, NULL, 'M' },
		{ "keep-versions", required_argument, NULL, 'N' },
		{ "gc-interval-s", required_argument, NULL, 'G' },
		{ "no-gc", no_argument, NULL, 'Z' },
		{ "no-seccomp-reports", no_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct run run;
	struct run *r = &run;
	struct sbx_error e;
	const char *state = NULL, *store = NULL, *egress = NULL, *bootstrap = NULL, *secrets = NULL;
	bool no_snapshot = false, standby = false;
	int c;

	sbx_diag_program("sbx-run");
	if (argc > 1 && !strcmp(argv[1], "verify"))
		return run_verify_command(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "sweep"))
		return run_sweep_command(argc - 1, argv + 1);
	if (argc > 1 && (!strcmp(argv[1], "commit") || !strcmp(argv[1], "discard")))
		return run_commit_command(argc - 1, argv + 1, !strcmp(argv[1], "commit"));
	if (argc > 1 && !strcmp(argv[1], "cancel")) {
		if (argc != 3)
			sbx_cli_usage_error("sbx-run", "cancel takes one EXECUTION-DIR");
		return run_cancel_command(argv[2]);
	}
	r->started_mono_ms = sbx_mono_ms();
	r->grace_ms = 5000;
	r->reserve_ms = 15000;
	r->worker.fd = r->worker.sandbox_end = r->worker.scratch_fd = -1;
	r->lease_fd = -1;
	for (int i = 0; i < SBX_CG_DIRS; i++)
		r->cg.procs_fd[i] = -1;
	r->egress_lock_fd = -1;
	r->seccomp.sock = r->seccomp.sandbox_end = r->seccomp.listener = -1;
	r->workload_uid = -1;
	r->spec.dir = r->spec.layer = r->spec.upper = -1;
	r->held.pid = r->held.sock = -1;
	r->egress_idle_s = 300;
	run_store_defaults(r);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 's': state = optarg; break;
		case 'S': store = optarg; break;
		case 'n': no_snapshot = true; break;
		case 'Q': r->no_seccomp_reports = true; break;
		case 'O': r->output_by_reference = true; break;
		case 'W': standby = true; break;
		case 'T': r->transient = true; break;
		case 'g': r->grace_ms = (int)sbx_cli_parse_long("--grace-ms", optarg, 0, 3600000); break;
		case 'R': r->reserve_ms = (int)sbx_cli_parse_long("--deadline-reserve-ms", optarg, 0, 3600000); break;
		case 'P': r->platform_deadline_ms = sbx_cli_parse_long("--platform-deadline-ms", optarg, 1, 86400000LL * 30); break;
		case 'k':
			if (sbx_signer_from_fd(&r->signer, (int)sbx_cli_parse_long("--signing-key-fd", optarg, 3, 65535), &e) != 0)
				sbx_die(&e);
			break;
		case 'K':
			if (sbx_signer_from_file(&r->signer, optarg, &e) != 0)
				sbx_die(&e);
			break;
		case 'E': egress = optarg; break;
		case 'U': r->egress_upstream_ca = optarg; break;
		case 'Y': secrets = optarg; break;
		case 'B': bootstrap = optarg; break;
		case 'X': r->keep_scratch = true; break;
		case 'D':
			if (r->n_egress_resolve == RUN_MAX_RESOLVE)
				sbx_cli_usage_error("sbx-run", "--egress-resolve: at most 16");
			r->egress_resolve[r->n_egress_resolve++] = optarg;
			break;
		case 'I': r->egress_idle_s = (int)sbx_cli_parse_long("--egress-idle-s", optarg, 1, 86400 * 30); break;
		case 'h': run_usage(stdout); return SBX_EXIT_OK;
		case 'V': sbx_cli_print_version("sbx-run"); return SBX_EXIT_OK;
		case 'M': case 'N': case 'G': case 'Z': run_store_option(r, c, optarg); break;
		default: sbx_cli_bad_option("sbx-run", argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		sbx_cli_usage_error("sbx-run", "at most one REQUEST argument");
	if (no_snapshot && store)
		sbx_cli_usage_error("sbx-run", "--no-snapshot and --snapshot-store exclude each other");
	const char *bootstrap_env = getenv("MAPI_BOOTSTRAP_URL");
	bool job = bootstrap || (bootstrap_env && *bootstrap_env);
	if (job && (standby || optind < argc || no_snapshot))
		sbx_cli_usage_error("sbx-run", "job mode reads its request from the bootstrap URL, keeps media in the "
					       "snapshot store and cannot be a standby (no REQUEST, --no-snapshot or --standby)");
	char data[PATH_MAX];
	int n = -1;
	if (state)
		n = snprintf(r->state_dir, sizeof(r->state_dir), "%s", state);
	else if (sbx_data_dir(data, sizeof(data)) == 0)
		n = sbx_data_path(data, SBX_DATA_EXECUTIONS, NULL, r->state_dir, sizeof(r->state_dir)) == 0
			    ? (int)strlen(r->state_dir) : -1;
	if (n < 0 || (size_t)n >= sizeof(r->state_dir) - 64)
		sbx_cli_usage_error("sbx-run", "--state-dir: path too long");
	area_dir(egress, SBX_DATA_EGRESS, "--egress-dir", r->egress_dir, sizeof(r->egress_dir));
	area_dir(secrets, SBX_DATA_SECRETS, "--secrets-dir", r->secrets_dir, sizeof(r->secrets_dir));
	if (!no_snapshot) {
		n = store ? snprintf(r->store, sizeof(r->store), "%s", store)
			  : snprintf(r->store, sizeof(r->store), "%s/snapshots", r->state_dir);
		if (n < 0 || (size_t)n >= sizeof(r->store))
			sbx_cli_usage_error("sbx-run", "--snapshot-store: path too long");
	}

	/* 1. The request, whole, before anything is created for it; a standby
	 * is narrowed, holds its launch and makes its directory while it waits. */
	json_t *doc = NULL;
	if (standby) {
		if (optind < argc || !run_standby_placeholders())
			sbx_cli_usage_error("sbx-run", "--standby reads its request from a socket on stdin, with fds 3-6 open");
		struct sbx_run_limits defaults;
		if (run_narrow_capabilities(r, &e) != 0 || sbx_run_limit_defaults(&defaults, &e) != 0)
			sbx_die(&e);
		run_hold_launch(r, "standby", &defaults, true);
		run_settle_state_dir(r);
		run_stage(r);
		size_t len;
		char *text = run_standby_request(REQUEST_CAP, &len, &e);
		if (text && len == 0) { /* released unused: nothing to report */
			free(text);
			release_standby(r);
			return SBX_EXIT_OK;
		}
		doc = text ? sbx_json_parse(text, len, "request", &e) : NULL;
		free(text);
	} else if (job) {
		/* A SIGTERM from here on waits for the signalfd: the document may
		 * already be deleted, so the run must end as a documented timeout. */
		sigset_t early = stop_signals();
		sigprocmask(SIG_BLOCK, &early, NULL);
		doc = run_job_bootstrap(r, bootstrap, &e);
		if (r->job)
			r->job->started_ms = r->started_mono_ms;
	} else {
		doc = sbx_json_load(optind < argc ? argv[optind] : "-", REQUEST_CAP, &e);
	}
	if (!doc || sbx_run_request_parse(doc, &r->req, &e) != 0)
		refuse(r, &e);
	if (sbx_sibling_program("sbx-launch", r->launch, sizeof(r->launch)) != 0) {
		sbx_error_set(&e, SBX_EXIT_NO_SANDBOX, "launch-missing", "sbx-launch was found neither next to sbx-run nor on PATH");
		refuse(r, &e);
	}
	/* 2. The execution directory (a standby's is made; it is renamed):
	 * a second run of one id is refused. */
	if (!standby)
		run_settle_state_dir(r);
	if (snprintf(r->exec_dir, sizeof(r->exec_dir), "%s/%s", r->state_dir, r->req.execution_id) >= (int)sizeof(r->exec_dir)) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "path-too-long", "--state-dir: path too long");
		refuse(r, &e);
	}
	int staged = r->staged[0] ? run_take_stage(r, &e) : 0;
	if (staged < 0)
		refuse(r, &e);
	if (!staged && mkdir(r->exec_dir, 0700) != 0) {
		sbx_error_set(&e, SBX_EXIT_USAGE, errno == EEXIST ? "duplicate-execution" : "state-unusable",
			      "executionId: %s: %s", r->exec_dir, errno == EEXIST ? "already used" : strerror(errno));
		refuse(r, &e);
	}
	if (!staged)
		run_record_supervisor(r);
	if (standby) {
		run_adopt_launch(r);
	} else {
		if (run_narrow_capabilities(r, &e) != 0) {
			sbx_remove_tree(r->exec_dir); /* refused: nothing made for it stays */
			sbx_die(&e);
		}
		run_hold_launch(r, r->req.execution_id, &r->req.limits, false);
	}
	if (r->dev_mode)
		run_event("mode", r, json_pack("{s:b,s:s}", "devMode", 1, "note",
					      "not started as root: the workload runs as this uid inside bwrap's user "
					      "namespace; dev mode is never a security boundary between supervisor and workload"));
	else
		run_event("mode", r, json_pack("{s:b,s:O}", "devMode", 0, "missingCapabilities", r->missing_caps));
	sigset_t mask = stop_signals();
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	r->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	/* 3. The worker's scratch and channel, provenance, then the run. */
	struct sbx_run_as who, workload;
	if (sbx_run_as_resolve(NULL, &who, &e) != 0 || run_workload_identity(r, &who, &workload, &e) != 0 ||
	    worker_open(r, workload.uid, workload.gid, who.switch_user, &e) != 0 || run_egress_acquire(r, &who, &e) != 0)
		fail(r, &e);
	else if (r->req.speculative && run_speculative_prepare(r, workload.uid, workload.gid, who.switch_user, &e) != 0)
		fail(r, &e);
	else if (run_record_spec(r, &e) != 0 || (r->job && run_job_manifest_start(r, &e) != 0))
		fail(r, &e);
	else
		execute(r, &e);
	run_speculative_finish(r);

	/* 4. A job's reported media and checkpoints go up (its outputs went
	 * as they were collected); the result, durable (unless --transient)
	 * before the lease goes; a job's signed manifest. */
	if (r->job)
		run_job_upload_reported(r);
	/* The workload is gone: its last egress refusals are read, then goes
	 * the gateway that held its secrets. */
	run_egress_watch_finish(r);
	run_secrets_release(r);
	/* Every refusal the run met, its last counts said before the result. */
	run_limit_denials(r);
	run_denials_flush(r, true);
	json_t *result = run_result(r);
	json_object_set_new(result, "denials", run_denials_json(&r->denials));
	json_object_set_new(result, "seccompReporting", run_seccomp_report(&r->seccomp));
	if (run_write_result(r, result, &e) != 0) {
		sbx_diag_error(&e);
		r->exit_code = SBX_EXIT_INTERNAL;
	}
	/* For schedulers (Slurm, Kubernetes Jobs): a workload that exited
	 * non-zero, died of a signal or reported an error is a failed job. */
	int status = r->exit_code;
	bool workload_failed = r->ran && ((WIFEXITED(r->wait_status) && WEXITSTATUS(r->wait_status) != 0) ||
					  WIFSIGNALED(r->wait_status) || r->worker.error);
	if (status == SBX_EXIT_OK && workload_failed)
		status = SBX_EXIT_WORKLOAD;
	if (r->job)
		status = run_job_manifest(r, result, status);
	/* The status this process exits with, said now: a caller need not
	 * wait for the exit (only clean-up follows) to act on the result. */
	run_event("finished", r, json_pack("{s:O,s:i}", "result", result, "status", status));
	if (r->exit_code)
		sbx_diag("error", sbx_json_string_or(result, "failureClass", "error"), NULL, "%s", r->error);
	json_decref(result);
	sbx_output_close(&r->out);
	sbx_sandbox_close(&r->sb);
	json_decref(r->outputs);
	json_decref(r->missing_caps);
	if (r->lease_fd >= 0)
		close(r->lease_fd);
	/* Nobody to cancel any more. */
	int dirfd = open(r->exec_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd >= 0) {
		unlinkat(dirfd, "supervisor.json", 0);
		close(dirfd);
	}
	worker_close(&r->worker);
	run_seccomp_close(&r->seccomp);
	run_denials_free(&r->denials);
	sbx_spawn_discard(&r->held); /* a run that never launched */
	sbx_cgroup_remove(&r->cg);
	json_decref(r->placeholders);
	if (r->job && !r->keep_scratch)
		sbx_remove_tree(r->exec_dir); /* the job's results are in the store now */
	run_job_free(r);
	run_speculative_close(&r->spec);
	run_collect_store(r);
	return status;
}
