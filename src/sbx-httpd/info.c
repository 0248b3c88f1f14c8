/* info.c — the read-only endpoints: /health (from startup facts only: no
 * file or process per request), /status, /resources, the kernel routes
 * (persistent kernels are rejected, so there are none), and the answers of
 * features this build does not have. */
#include "info.h"
#include "server.h"
#include "config.h"
#include "reply.h"
#include "body.h"
#include "environments.h"
#include "connections.h"
#include "npu.h"
#include "../lib/clock.h"
#include "collect.h"
#include "../lib/cgroup_limits.h"
#include "../lib/diag.h"
#include "../lib/launch_spec.h"
#include "../lib/run_as.h"
#include "../lib/supervisor_caps.h"
#include "../lib/workspace_uid.h"
#include "../lib/datadir.h"

#include <pthread.h>
#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <microhttpd.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* Who the workloads run as, for /health: the uid sbx-run switches to when
 * root (and whether each workspace gets its own), else this process's user. */
void info_execution_identity(struct server *s)
{
	struct sbx_run_as as;
	struct sbx_error e = { 0 };
	s->execution_uid = geteuid();
	s->execution_gid = getegid();
	if (sbx_run_as_resolve(NULL, &as, &e) == 0 && as.switch_user) {
		s->execution_uid = as.uid;
		s->execution_gid = as.gid;
		struct sbx_uid_range range;
		if (sbx_uid_range_from_env(&range, as.uid, &e) == 0 && range.count) {
			s->workspace_uid_first = range.first;
			s->workspace_uid_count = range.count;
		}
	}
	/* What sbx-run will be given, checked as it checks it: said once here,
	 * and in /health, rather than only in each run's first event. */
	if (geteuid() == 0) {
		struct sbx_supervisor_caps caps;
		struct sbx_error ce;
		if (sbx_supervisor_caps_check(&caps, &ce) == 0) {
			size_t i;
			json_t *m;
			json_array_foreach(caps.missing, i, m)
				sbx_diag("warning", "capability-missing", NULL, "sbx-run will run without %s: %s",
					 json_string_value(json_object_get(m, "capability")),
					 json_string_value(json_object_get(m, "lost")));
			s->supervisor_caps = json_pack("{s:o,s:n}", "missing", caps.missing, "error");
		} else {
			sbx_diag_error(&ce); /* every run will be refused so: said now */
			s->supervisor_caps = json_pack("{s:[],s:s}", "missing", "error", ce.message);
		}
	}
	struct passwd *pw = getpwuid(s->execution_uid);
	if (pw)
		snprintf(s->execution_user, sizeof(s->execution_user), "%s", pw->pw_name);
	else if (s->execution_uid == geteuid() && getenv("USER"))
		snprintf(s->execution_user, sizeof(s->execution_user), "%.63s", getenv("USER"));
	else
		snprintf(s->execution_user, sizeof(s->execution_user), "%u", (unsigned)s->execution_uid);
}

/* Every execution's default bounds and what holds them on this host,
 * worked out once at startup (sbx-run applies the same defaults). */
static json_t *default_limits;

void info_limits_init(void)
{
	struct sbx_run_limits l;
	struct sbx_error e;
	if (sbx_run_limit_defaults(&l, &e) != 0)
		sbx_die(&e);
	enum sbx_cgroup_mode mode = sbx_cgroup_probe(&l);
	const struct config *c = &g_server.cfg;
	default_limits = json_pack(
		"{s:s,s:I,s:I,s:i,s:i,s:s,s:I,s:I,s:b,s:I,s:I,s:I,s:I}", "mode",
		l.memory_bytes || l.pids ? sbx_cgroup_mode_name(mode) : "none", "memoryBytes", (json_int_t)l.memory_bytes,
		"processes", (json_int_t)l.pids, "perUidProcesses", SBX_MAX_PROCESSES_DEFAULT, "openFiles",
		SBX_MAX_OPEN_FILES_DEFAULT, "fileSizeBytes", "remaining maxWorkspaceBytes + 1", "tmpBytes",
		(json_int_t)SBX_TMP_SIZE_DEFAULT, "shmBytes", (json_int_t)SBX_SHM_SIZE_DEFAULT, "devReadOnly", 1,
		"maxConnections", (json_int_t)c->max_connections, "maxRequests", (json_int_t)c->max_requests,
		"connectionIdleMs", (json_int_t)CONNECTION_IDLE_S * 1000, "workspaceFiles",
		(json_int_t)c->max_workspace_files);
}

enum MHD_Result handle_health(struct req *r)
{
	const struct server *s = &g_server;
	json_t *modes = json_pack("[s]", "none");
	if (s->network_available)
		json_array_append_new(modes, json_string("domain-allowlist"));
	json_t *network = json_pack("{s:b,s:o}", "available", 1, "modes", modes);
	if (!s->network_available)
		json_object_set_new(network, "unavailableReason", json_string(s->network_reason));
	json_t *envs = environments_capability();
	json_t *body = json_pack(
		"{s:b,s:s,s:s,s:s,s:s,s:I,s:i,s:I,s:I,s:s,s:b,s:o,s:s,s:s,s:s,s:o,s:o,s:s,s:s,s:n}",
		"cgroupDelegated", 0, "cgroupMode", "none", "cgroupRoot", "", "executionAuth", "bearer+hmac-sha256",
		"executionUser", s->execution_user, "executionTimeoutMs", (json_int_t)s->cfg.exec_timeout_ms,
		"maxFileBytes", 0, "maxOutputBytes", (json_int_t)s->cfg.max_output_bytes, "maxWorkspaceBytes",
		(json_int_t)s->cfg.max_workspace_bytes, "networkPolicy", "none", "noNewPrivileges", 1, "npuBroker",
		npu_capability(), "runnerVersion", s->version, "platform", "linux",
		"sandbox", "bubblewrap", "sandboxNetwork", network, "scientificEnvs", envs, "seccompBaseline",
		"multiarch-v1-profile-aware", "status", "ok", "workerConcurrency");
	json_object_set(body, "limits", default_limits);
	json_object_set_new(body, "retention", collect_health());
	/* Extensions: the numeric identity, and the per-workspace uid range. */
	json_object_set_new(body, "executionUid", json_integer(s->execution_uid));
	json_object_set_new(body, "executionGid", json_integer(s->execution_gid));
	json_object_set(body, "supervisorCapabilities", s->supervisor_caps ? s->supervisor_caps : json_null());
	json_object_set_new(body, "workspaceUids",
			    s->workspace_uid_count ? json_pack("{s:I,s:I}", "first", (json_int_t)s->workspace_uid_first,
							       "last", (json_int_t)s->workspace_uid_first +
									       (json_int_t)s->workspace_uid_count - 1)
						   : json_null());
	return reply_json(r, 200, body);
}

enum MHD_Result handle_status(struct req *r)
{
	char now[32];
	json_t *active = json_array();
	sbx_iso_time(sbx_wall_ms(), now);
	pthread_mutex_lock(&g_server.lock);
	for (struct active *a = g_server.active; a; a = a->next) {
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "agentId", a->agent_id, "executionId",
				      a->execution_id, "kernelMode", "ephemeral", "language", a->language, "queuedAt",
				      a->queued_at, "sessionId", a->session_id, "status", a->running ? "running" : "queued");
		if (a->running)
			json_object_set_new(o, "startedAt", json_string(a->started_at));
		json_array_append_new(active, o);
	}
	pthread_mutex_unlock(&g_server.lock);
	return reply_json(r, 200, json_pack("{s:o,s:s,s:[],s:o,s:s,s:s}", "activeExecutions", active, "capturedAt",
					    now, "kernels", "npuJobs", npu_active_jobs(), "runnerVersion", g_server.version, "status",
					    "ok"));
}

enum MHD_Result handle_resources(struct req *r)
{
	char now[32], disk_path[PATH_MAX + 32], real[PATH_MAX];
	struct sysinfo si;
	double load[1] = { 0 };
	sbx_iso_time(sbx_wall_ms(), now);
	sysinfo(&si);
	getloadavg(load, 1);
	json_t *body = json_pack("{s:s,s:I,s:f,s:I,s:I,s:I}", "capturedAt", now, "cpuCores",
				 (json_int_t)sysconf(_SC_NPROCESSORS_ONLN), "loadAverage1m", load[0], "memoryTotalBytes",
				 (json_int_t)si.totalram * si.mem_unit, "memoryFreeBytes",
				 (json_int_t)si.freeram * si.mem_unit, "uptimeSeconds", (json_int_t)si.uptime);
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_REMOTE_WORKSPACES, NULL, disk_path, sizeof(disk_path));
	struct statvfs vfs;
	if (realpath(disk_path, real) && statvfs(real, &vfs) == 0) {
		json_object_set_new(body, "workspaceDisk",
				    json_pack("{s:s,s:I,s:I}", "path", real, "totalBytes",
					      (json_int_t)vfs.f_blocks * (json_int_t)vfs.f_frsize, "availableBytes",
					      (json_int_t)vfs.f_bavail * (json_int_t)vfs.f_frsize));
	} else {
		json_object_set_new(body, "workspaceDisk", json_null());
		json_object_set_new(body, "workspaceDiskError", json_string("the remote-workspaces directory is unavailable"));
	}
	return reply_json(r, 200, body);
}

/* Persistent kernels are rejected, so teardown finds none: count 0. The
 * session form still waits for the session's executions to finish. */
enum MHD_Result handle_kernels(struct req *r, const char *kernel_id)
{
	enum MHD_Result sent;
	json_t *doc = body_object(r, &sent);
	if (!doc)
		return sent;
	const char *reason = json_string_value(json_object_get(doc, "reason"));
	reason = reason ? reason : "Persistent kernel memory was cleared";
	json_t *body;
	if (kernel_id) {
		body = json_pack("{s:i,s:s,s:s}", "count", 0, "kernelId", kernel_id, "reason", reason);
	} else {
		const char *session = json_string_value(json_object_get(doc, "sessionId"));
		if (!session || !*session || strspn(session, " \t\r\n") == strlen(session)) {
			json_decref(doc);
			return reply_error(r, 400, "sessionId is required");
		}
		/* Woken as executions leave; a client that goes stops the wait. */
		pthread_mutex_lock(&g_server.lock);
		for (;;) {
			bool busy = false;
			for (struct active *a = g_server.active; a; a = a->next)
				busy = busy || !strcmp(a->session_id, session);
			if (!busy)
				break;
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&g_server.active_changed, &g_server.lock, &ts);
			pthread_mutex_unlock(&g_server.lock);
			bool gone = client_gone(r);
			pthread_mutex_lock(&g_server.lock);
			if (gone)
				break;
		}
		pthread_mutex_unlock(&g_server.lock);
		body = json_pack("{s:i,s:s}", "count", 0, "reason", reason);
	}
	json_decref(doc);
	return reply_json(r, 200, body);
}
