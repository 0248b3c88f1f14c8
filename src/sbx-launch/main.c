/* sbx-launch — a launch spec becomes a hardened sandbox: validate the spec,
 * settle who runs it, compile the filter, then exec bwrap (or, with
 * --dry-run, print the provenance record and exec nothing). */
#include "../lib/cli.h"
#include "../lib/datadir.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "identity_files.h"
#include "../lib/json.h"
#include "exec.h"
#include "host.h"
#include "plan.h"
#include "../lib/launch_spec.h"
#include "../lib/probe.h"
#include "../lib/probe_cache.h"
#include "../lib/run_as.h"
#include "../lib/seccomp_build.h"
#include "../lib/seccomp_table.h"
#include "../lib/sys_admin_cap.h"
#include "../lib/workspace_owner.h"
#include "../lib/atomic_file.h"
#include "bind_stage.h"
#include "launch_caps.h"
#include "overlay.h"

#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct options {
	bool dry_run;
	bool list_seccomp;
	int info_fd;
	int channel_fd;
	int denials_fd;
	int plan_fd;
	const char *capabilities;
	const char *run_as;
	const char *spec;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sbx-launch [--dry-run] [--capabilities FILE] [--run-as USER|UID[:GID]] [SPEC|-]\n"
		"\n"
		"Reads a launch spec (JSON, see sbx-formats(5)), validates it, and execs bwrap with the\n"
		"seccomp filter on fd 3. See sbx-launch(1).\n"
		"\n"
		"  --dry-run              print {argv, env, cwd, seccompProfile, seccomp, runAs, probe}\n"
		"                         and exec nothing\n"
		"  --list-seccomp         print the seccomp rule table, one JSON object per line\n"
		"  --info-fd FD           bwrap writes {\"child-pid\": N} (the sandbox's pid 1) to FD, and\n"
		"                         {\"exit-code\": N} once the workload has ended\n"
		"  --channel-fd FD        FD enters the sandbox as fd 5, named by SBX_CHANNEL_FD\n"
		"  --plan-fd FD           write the --dry-run record to FD (one line, then closed)\n"
		"  --denials-fd FD        report refused syscalls: the seccomp listener is sent on\n"
		"                         the unix socket FD (sbx-seccomp-notify(1))\n"
		"                         just before bwrap is exec'd\n"
		"  --capabilities FILE    a probe answer (sbx-probe's JSON) instead of the cached probe\n"
		"  --run-as USER|UID[:GID] who the workload runs as when started by root\n"
		"                         (default: $SBX_RUN_AS, the 'sbx' user, else 10001:10001)\n"
		"  --help, --version\n");
	sbx_cli_print_exit_codes(out);
}

/* The listener travels by SCM_RIGHTS: a Unix socket only. */
static bool is_unix_socket(int fd)
{
	struct stat st;
	int domain = 0;
	socklen_t len = sizeof(domain);
	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
	       domain == AF_UNIX;
}

/* The kernel can hand out a seccomp listener (Linux 5.0 and later) and
 * keep the workload away from the sandbox's pid 1, which lacks the
 * notifying filter (Landlock, 5.13 and later, enabled): see
 * sbx-seccomp-notify(1). */
static bool notify_supported(void)
{
	struct seccomp_notif_sizes sizes;
	return syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0 &&
	       syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) >= 1;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_DRY = 256, OPT_LIST, OPT_INFO, OPT_CHANNEL, OPT_PLAN, OPT_DENIALS, OPT_CAPS, OPT_RUN_AS, OPT_VERSION };
	static const struct option options[] = {
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "list-seccomp", no_argument, NULL, OPT_LIST },
		{ "info-fd", required_argument, NULL, OPT_INFO },
		{ "channel-fd", required_argument, NULL, OPT_CHANNEL },
		{ "plan-fd", required_argument, NULL, OPT_PLAN },
		{ "denials-fd", required_argument, NULL, OPT_DENIALS },
		{ "capabilities", required_argument, NULL, OPT_CAPS },
		{ "run-as", required_argument, NULL, OPT_RUN_AS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	o->info_fd = o->channel_fd = o->plan_fd = o->denials_fd = -1;
	while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		switch (c) {
		case OPT_DRY: o->dry_run = true; break;
		case OPT_LIST: o->list_seccomp = true; break;
		case OPT_INFO: o->info_fd = (int)sbx_cli_parse_long("--info-fd", optarg, 0, 65535); break;
		case OPT_CHANNEL: o->channel_fd = (int)sbx_cli_parse_long("--channel-fd", optarg, 0, 65535); break;
		case OPT_PLAN: o->plan_fd = (int)sbx_cli_parse_long("--plan-fd", optarg, 0, 65535); break;
		case OPT_DENIALS: o->denials_fd = (int)sbx_cli_parse_long("--denials-fd", optarg, 0, 65535); break;
		case OPT_CAPS: o->capabilities = optarg; break;
		case OPT_RUN_AS: o->run_as = optarg; break;
		case 'h': usage(stdout); exit(SBX_EXIT_OK);
		case OPT_VERSION: sbx_cli_print_version("sbx-launch"); exit(SBX_EXIT_OK);
		default: sbx_cli_bad_option("sbx-launch", argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		sbx_cli_usage_error("sbx-launch", "at most one SPEC argument");
	if (o->info_fd >= 0 && (o->info_fd <= 2 || fcntl(o->info_fd, F_GETFD) < 0))
		sbx_cli_usage_error("sbx-launch", "--info-fd: must name an open descriptor above 2");
	/* A dry run only records the variable; a launch needs the descriptor. */
	if (o->channel_fd >= 0 && (o->channel_fd <= 2 || (!o->dry_run && fcntl(o->channel_fd, F_GETFD) < 0)))
		sbx_cli_usage_error("sbx-launch", "--channel-fd: must name an open descriptor above 2");
	if (o->denials_fd >= 0 && (o->denials_fd <= 2 || (!o->dry_run && !is_unix_socket(o->denials_fd))))
		sbx_cli_usage_error("sbx-launch", "--denials-fd: must name an open unix socket above 2");
	/* Its own descriptor: the plan's is closed once written, bwrap writes
	 * on the info one, and the channel's enters the sandbox (the workload
	 * would hold the socket the listener travels on). */
	if (o->denials_fd >= 0 &&
	    (o->denials_fd == o->info_fd || o->denials_fd == o->channel_fd || o->denials_fd == o->plan_fd))
		sbx_cli_usage_error("sbx-launch", "--denials-fd: must differ from --info-fd, --channel-fd and --plan-fd");
	if (o->plan_fd >= 0 && (o->plan_fd <= 3 || o->plan_fd == o->info_fd || o->plan_fd == o->channel_fd ||
				fcntl(o->plan_fd, F_GETFD) < 0))
		sbx_cli_usage_error("sbx-launch", "--plan-fd: must name another open descriptor above 3");
	o->spec = optind < argc ? argv[optind] : "-";
}

/* The rule table, the single source of the seccomp policy. */
static int list_seccomp(void)
{
	static const char *const matches[] = { "any", "clone-newns-flags", "ioctl-request",
					       "personality-set", "socket-inet", "socket-other" };
	for (size_t i = 0; i < sbx_seccomp_rules_len; i++) {
		const struct sbx_seccomp_rule *r = &sbx_seccomp_rules[i];
		json_t *profiles = json_array();
		for (int p = 0; p < SBX_SECCOMP_PROFILE_COUNT; p++)
			if (r->profiles & SBX_PROFILE_BIT(p))
				json_array_append_new(profiles, json_string(sbx_seccomp_profile_name(p)));
		json_t *row = json_pack("{s:s,s:s,s:s,s:o,s:s}", "syscall", r->syscall,
					"errno", strerrorname_np(r->error), "match", matches[r->match],
					"profiles", profiles, "reason", r->reason);
		if (r->match == SBX_MATCH_IOCTL_REQUEST)
			json_object_set_new(row, "request", json_integer((json_int_t)r->value));
		int rc = sbx_json_print(stdout, row);
		json_decref(row);
		if (rc != 0)
			return SBX_EXIT_INTERNAL;
	}
	return SBX_EXIT_OK;
}

/* The --capabilities file, read as the starting user (before any switch):
 * `--capabilities <(sbx-probe)` and a 0600 file work as root. */
static json_t *capabilities_file(const struct options *o)
{
	struct sbx_error e;
	json_t *answer = NULL;
	if (o->capabilities && !(answer = sbx_json_load(o->capabilities, SBX_JSON_MAX_INPUT, &e)))
		sbx_die(&e);
	return answer;
}

/* The probe answer: the --capabilities file's, else the cached probe for
 * the caller class the workload runs as (root reads its own cache, and
 * probes as that uid only when the host's shape changed). */
static json_t *capabilities(json_t *given, const char *cache_dir, const struct sbx_run_as *who,
			    struct sbx_sandbox_profile *p)
{
	struct sbx_error e;
	json_t *answer;

	if (given) {
		answer = given;
	} else {
		struct sbx_probe_request req = { .cache_dir = cache_dir, .as = who };
		answer = sbx_probe(&req);
	}
	if (sbx_probe_profile(answer, p) != 0) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "bad-capabilities",
			      "capabilities: not a probe answer (usable, procMode, disableUserns, bwrap.path)");
		sbx_die(&e);
	}
	if (!p->usable) {
		sbx_error_set(&e, SBX_EXIT_NO_SANDBOX, "sandbox-unusable", "this host cannot sandbox: %.700s",
			      sbx_json_string_or(answer, "detail", "see sbx-probe"));
		const json_t *w = json_array_get(json_object_get(answer, "warnings"), 0);
		sbx_error_remedy(&e, "%.900s", sbx_json_string_or(w, "remedy", "Run sbx-probe for the diagnosis."));
		sbx_die(&e);
	}
	return answer;
}

/* The workload's uid must be able to use what bwrap binds: checked as that
 * uid on the fd itself. A staged launch (bind_stage.h) needs no walk to
 * it; any other has bwrap find the fd again by its name as this uid, so
 * that walk is checked too.
 * Only a refusal follows from the check; nothing is opened by name. */
static bool staged;

static void check_access(const struct sbx_host_dir *d, int mode, const char *field, const struct sbx_run_as *r)
{
	struct sbx_error e;
	if (d->fd >= 0 && (faccessat(d->fd, "", mode, AT_EMPTY_PATH) != 0 || (!staged && access(d->path, X_OK) != 0))) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "not-accessible", "%s: %.300s is not %s by uid %u", field, d->path,
			      mode & W_OK ? "writable" : "readable", (unsigned)r->uid);
		sbx_error_remedy(&e, "Make the directory (and, for a launch that keeps its uid, every parent) accessible to that uid.");
		sbx_die(&e);
	}
}

static void check_socket_access(const struct sbx_launch_host *h, const char *path, const struct sbx_run_as *r)
{
	struct sbx_error e;
	if (h->egress_socket_fd >= 0 && faccessat(h->egress_socket_fd, "", R_OK | W_OK, AT_EMPTY_PATH) != 0) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "not-accessible", "network.socket: %.300s is not writable by uid %u",
			      path, (unsigned)r->uid);
		sbx_error_remedy(&e, "Give the socket to the workload's uid or group (sbx-egress --socket-owner).");
		sbx_die(&e);
	}
}

static json_t *string_list(const struct sbx_strvec *v)
{
	json_t *a = json_array();
	for (size_t i = 0; i < v->len; i++)
		json_array_append_new(a, sbx_json_string_lossy(v->items[i]));
	return a;
}

/* The --dry-run record: what the sandbox gets and who runs it. */
static json_t *dry_run_record(const struct sbx_launch_spec *spec, const struct sbx_launch_plan *plan,
			      const struct sbx_seccomp_program *prog, const struct sbx_run_as *r, json_t *probe)
{
	json_t *env = json_object();
	for (size_t i = 0; i < plan->env_keys.len; i++)
		json_object_set_new(env, plan->env_keys.items[i], sbx_json_string_lossy(plan->env_values.items[i]));
	json_t *out = json_pack("{s:o,s:o,s:s,s:s,s:{s:s,s:s,s:I,s:b},s:{s:I,s:I},s:O}",
				"argv", string_list(&plan->argv), "env", env, "cwd", spec->cwd,
				"seccompProfile", sbx_seccomp_profile_name(spec->profile),
				"seccomp", "arch", prog->arch, "libseccomp", prog->libseccomp,
				"instructions", (json_int_t)prog->instructions, "fromCache", prog->from_cache,
				"runAs", "uid", (json_int_t)r->uid, "gid", (json_int_t)r->gid, "probe", probe);
	/* Whether the reported calls notify the supervisor (sbx-seccomp-notify). */
	json_object_set_new(json_object_get(out, "seccomp"), "reporting", json_boolean(spec->report_denials));
	/* Which host directory each --bind-fd slot holds. */
	json_t *binds = json_array();
	for (size_t i = 0; i < plan->n_bind; i++)
		json_array_append_new(binds, json_pack("{s:i,s:o}", "fd", SBX_BIND_FD_FIRST + (int)i, "path",
						       sbx_json_string_lossy(plan->bind_name[i])));
	json_object_set_new(out, "binds", binds);
	json_object_set_new(out, "rlimits", json_pack("{s:I,s:I,s:I,s:I}", "processes", (json_int_t)plan->max_processes,
						      "openFiles", (json_int_t)plan->max_open_files, "fileSize",
						      (json_int_t)plan->file_size_limit, "addressSpace",
						      (json_int_t)plan->max_address_space));
	return out;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct sbx_error e;
	struct sbx_launch_spec spec;
	struct sbx_run_as who;
	struct sbx_identity id;
	struct sbx_seccomp_program prog;
	struct sbx_sandbox_profile profile;
	struct sbx_launch_host host;
	struct sbx_launch_plan plan;
	char data[PATH_MAX], cache[PATH_MAX + 8];

	sbx_diag_program("sbx-launch");
	sbx_stdio_sanitize();
	parse_options(argc, argv, &o);
	/* Only what its own steps use, whoever started it; sys_admin (a root
	 * sbx-run leaves it in the bounding set) is for the bind staging
	 * alone: not effective before it, gone after it. */
	launch_caps_narrow();
	if (o.list_seccomp)
		return list_seccomp();
	json_t *given_caps = capabilities_file(&o);

	/* 1. The whole spec, before anything on the host changes. */
	json_t *doc = sbx_json_load(o.spec, SBX_JSON_MAX_INPUT, &e);
	if (!doc || sbx_launch_spec_parse(doc, &spec, &e) != 0)
		sbx_die(&e);
	json_decref(doc);
	spec.channel = o.channel_fd >= 0;
	/* Without a listener from the kernel or the helper, the whole filter
	 * refuses as before; the supervisor sees its socket close unused. */
	spec.report_denials = o.denials_fd >= 0 && notify_supported();
	if (sbx_run_as_resolve(o.run_as, &who, &e) != 0)
		sbx_die(&e);
	if (sbx_data_dir(data, sizeof(data)) != 0) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "path-too-long", "data directory path too long");
		sbx_die(&e);
	}
	sbx_data_path(data, SBX_DATA_CACHE, NULL, cache, sizeof(cache));

	/* 2. As the starting user: workspace ownership, the filter, the probe,
	 * and every host object the sandbox binds, opened now, bound by fd. */
	if (who.switch_user && !o.dry_run && spec.workspace.fd >= 0 &&
	    sbx_workspace_own_at(spec.workspace.fd, spec.workspace.path, who.uid, who.gid, &e) < 0)
		sbx_die(&e);
	sbx_launch_host_scan(spec.env_prefix.fd >= 0 && !spec.env_writable, &host);
	if (spec.report_denials && sbx_launch_host_find_notify(&host, &e) != 0) {
		sbx_diag_error(&e); /* reported below as unavailable; never a weaker filter */
		spec.report_denials = false;
	}
	struct sbx_seccomp_program notify = { .fd = -1 };
	if (sbx_mkdir_p(cache, 0700, &e) != 0 ||
	    (spec.report_denials && sbx_seccomp_program_part(spec.profile, SBX_FILTER_NOTIFY, cache, &notify, &e) != 0) ||
	    sbx_seccomp_program_part(spec.profile, spec.report_denials ? SBX_FILTER_UNREPORTED : SBX_FILTER_WHOLE, cache,
				     &prog, &e) != 0 ||
	    sbx_identity_open(who.uid, who.gid, &id, &e) != 0)
		sbx_die(&e);
	json_t *probe = capabilities(given_caps, cache, &who, &profile);
	if (sbx_launch_host_open_read_only(&host, &spec.devices.read_only, "devices.readOnly", &e) != 0 ||
	    sbx_launch_host_open_read_only(&host, &spec.read_only, "readOnlyPaths", &e) != 0)
		sbx_die(&e);
	if (spec.egress_socket && (sbx_launch_host_find_bridge(&host, &e) != 0 ||
				   sbx_launch_host_open_socket(&host, spec.egress_socket, &e) != 0 ||
				   (spec.egress_ca && sbx_launch_host_open_trust(&host, spec.egress_ca, &e) != 0)))
		sbx_die(&e);
	if (spec.channel && sbx_launch_host_find_report(&host, &e) != 0)
		sbx_die(&e);
	if (sbx_launch_plan_build(&spec, &profile, &host, &id, &plan, &e) != 0)
		sbx_die(&e);
	int stage = 1;
	if (who.switch_user && !o.dry_run) {
		(void)sbx_sys_admin_effective(true);
		stage = sbx_bind_stage(&plan, &e);
		/* A speculative launch's layers are reached through the staging. */
		if (stage == 1 && spec.overlay.fd >= 0) {
			sbx_error_set(&e, SBX_EXIT_NO_SANDBOX, "overlay-refused",
				      "speculative: the workspace's overlay needs the bind staging, which failed: %.800s", e.message);
			sbx_error_remedy(&e, "Give sbx-launch CAP_SYS_ADMIN and a writable /run, or run without \"speculative\".");
			stage = -1;
		}
	}
	sbx_sys_admin_drop();
	if (stage < 0)
		sbx_die(&e);
	staged = stage == 0;

	/* 3. Become the workload's user; everything after runs as it. */
	/* A credential change clears the parent-death signal a supervisor set
	 * (sbx-run's die-with-parent): armed again after the switch, or bwrap
	 * would outlive a killed supervisor, re-parented to init. */
	int pdeath = 0;
	pid_t parent = getppid();
	prctl(PR_GET_PDEATHSIG, &pdeath);
	if (sbx_run_as_switch(&who, &e) != 0)
		sbx_die(&e);
	/* A speculative launch: the overlay, mounted as the workload's uid in
	 * a user namespace of its own (overlay.h). */
	if (!o.dry_run && sbx_overlay_mount(&plan, &spec, staged, &e) != 0)
		sbx_die(&e);
	if (pdeath && (prctl(PR_SET_PDEATHSIG, pdeath) != 0 || getppid() != parent))
		_exit(SBX_EXIT_INTERNAL); /* the parent is already gone */
	/* A dry run as root leaves ownership alone; the real run fixes it first. */
	if (!(who.switch_user && o.dry_run)) {
		check_access(&spec.workspace, R_OK | W_OK | X_OK, "workspace", &who);
		check_access(&spec.cwd_dir, X_OK, "cwd", &who);
	}
	check_access(&spec.ro_parent, R_OK | X_OK, "readOnlyWorkspace", &who);
	check_access(&spec.env_prefix, spec.env_writable ? R_OK | W_OK | X_OK : R_OK | X_OK, "environment.prefix", &who);
	check_access(&spec.skills_root, R_OK | X_OK, "skills.root", &who);
	if (!(who.switch_user && o.dry_run)) {
		check_access(&spec.skills_ext, R_OK | W_OK | X_OK, "skills.extensions", &who);
		check_access(&spec.scratch, R_OK | W_OK | X_OK, "scratch", &who);
	}
	check_socket_access(&host, spec.egress_socket, &who);

	/* 4. The command line's last touches. */
	/* RLIMIT_NPROC counts every process of the uid: it bounds a sandbox only
	 * where the uid is the workload's own, not a caller's login. */
	if (!who.switch_user)
		plan.max_processes = 0;
	if (o.dry_run) {
		json_t *record = dry_run_record(&spec, &plan, &prog, &who, probe);
		int rc = record && sbx_json_print(stdout, record) == 0 ? SBX_EXIT_OK : SBX_EXIT_INTERNAL;
		json_decref(record);
		json_decref(probe);
		sbx_launch_plan_free(&plan);
		sbx_launch_host_free(&host);
		sbx_launch_spec_free(&spec);
		close(prog.fd);
		if (notify.fd >= 0)
			close(notify.fd);
		return rc;
	}
	if (o.plan_fd >= 0) {
		/* The caller's provenance, without a second launch to get it. */
		json_t *record = dry_run_record(&spec, &plan, &prog, &who, probe);
		char *text = record ? json_dumps(record, JSON_COMPACT) : NULL;
		if (!text || dprintf(o.plan_fd, "%s\n", text) < 0) {
			sbx_error_set(&e, SBX_EXIT_INTERNAL, "plan-fd", "--plan-fd: cannot write the record");
			sbx_die(&e);
		}
		free(text);
		json_decref(record);
		close(o.plan_fd);
	}
	json_decref(probe);
	if (o.info_fd >= 0) {
		/* --json-status-fd: {"child-pid": N, ...} at start, and {"exit-code": N}
		 * once the workload has ended, which a failed setup never writes. */
		sbx_strvec_insert(&plan.argv, 1, "--json-status-fd");
		sbx_strvec_insert(&plan.argv, 2, "4");
	}
	fflush(NULL);
	struct sbx_launch_fds fds = { prog.fd, o.info_fd, o.channel_fd, notify.fd,
				      spec.report_denials ? o.denials_fd : -1 };
	sbx_launch_exec(profile.bwrap_path, &plan, &fds, &e);
	sbx_die(&e);
}
