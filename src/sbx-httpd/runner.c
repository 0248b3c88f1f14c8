/* runner.c — sbx-run as a child: request in on stdin, JSON event lines out
 * on stdout, diagnostics on stderr; it dies with us (PR_SET_PDEATHSIG), so
 * no sandbox outlives the server. */
#include "runner.h"
#include "../lib/diag.h"
#include "standby.h"
#include "metrics.h"
#include "../lib/clock.h"
#include "../lib/json.h"
#include "json_escape.h"
#include "../lib/stage_call.h"
#include "../lib/tree_remove.h"
#include "../lib/datadir.h"
#include "../lib/path.h"
#include "../lib/beneath.h"
#include "server.h"
#include "speculative.h"

#include <pthread.h>
#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>
#include <dirent.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A finished event names the outputs, never carries them; its file lists
 * (createdFiles, ...) still grow with the workspace. */
#define EVENT_LINE_MAX (64u << 20)

#define SWEEP_MAX "64"      /* run directories one sweep removes at most */
#define SWEEP_TIMEOUT_MS 60000

/* <data>/runner-executions/runs, opened without following a symlink. */
static int runs_dir(void)
{
	char path[PATH_MAX + 64];
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_RUNNER_EXECUTIONS, "runs", path, sizeof(path));
	return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Run directories older than the retention go, unless their sbx-run
 * still lives (`sbx-run sweep`): at startup in every mode (what a crash or
 * a kill left), and before each start when runs are retained. */
void runner_sweep(void)
{
	char runs[PATH_MAX + 64], older[24];
	struct sbx_error e;
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_RUNNER_EXECUTIONS, "runs", runs, sizeof(runs));
	snprintf(older, sizeof(older), "%lld", g_server.cfg.run_retention_s);
	const char *argv[] = { g_server.prog.run, "sweep", "--older-than", older, "--max", SWEEP_MAX, runs, NULL };
	struct sbx_spawn s = { .argv = argv, .stdin_fd = -1, .die_with_parent = true };
	json_t *answer = sbx_stage_call(&s, SWEEP_TIMEOUT_MS, 4096, &e);
	metrics_stage_call(g_server.prog.run, answer != NULL, &e);
	if (!answer)
		sbx_diag("warning", "sweep-failed", NULL, "sbx-run sweep: %s", e.message);
	speculative_swept(answer); /* what an earlier server left pending */
	json_decref(answer);
}

/* Every sbx-run started and not yet let go, so that a shutdown can stop
 * them cleanly (they remove their cgroups and say why they ended) and wait
 * for their directories to go. A reaped one is marked (negated): its pid
 * may belong to another process by now and is never signalled. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t gone;
	pid_t *pids;
	size_t n, cap;
	bool stopping;
} live = { .lock = PTHREAD_MUTEX_INITIALIZER, .gone = PTHREAD_COND_INITIALIZER };

static bool live_add(pid_t pid)
{
	pthread_mutex_lock(&live.lock);
	bool ok = !live.stopping;
	if (ok && live.n == live.cap) {
		size_t cap = live.cap ? live.cap * 2 : 64;
		pid_t *grown = realloc(live.pids, cap * sizeof(*grown));
		if (grown) {
			live.pids = grown;
			live.cap = cap;
		} else {
			ok = false;
		}
	}
	if (ok)
		live.pids[live.n++] = pid;
	pthread_mutex_unlock(&live.lock);
	return ok;
}

static void live_reaped(pid_t pid)
{
	pthread_mutex_lock(&live.lock);
	for (size_t i = 0; i < live.n; i++)
		if (live.pids[i] == pid)
			live.pids[i] = -pid;
	pthread_mutex_unlock(&live.lock);
}

static void live_remove(pid_t pid)
{
	pthread_mutex_lock(&live.lock);
	for (size_t i = 0; i < live.n; i++)
		if (live.pids[i] == pid || live.pids[i] == -pid) {
			live.pids[i] = live.pids[--live.n];
			break;
		}
	pthread_cond_broadcast(&live.gone);
	pthread_mutex_unlock(&live.lock);
}

size_t runner_in_flight(void)
{
	pthread_mutex_lock(&live.lock);
	size_t n = live.n;
	pthread_mutex_unlock(&live.lock);
	return n;
}

void runner_drain(int wait_ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&live.lock);
	live.stopping = true;
	for (size_t i = 0; i < live.n; i++)
		if (live.pids[i] > 0)
			kill(live.pids[i], SIGTERM);
	while (live.n > 0 && pthread_cond_timedwait(&live.gone, &live.lock, &until) == 0)
		;
	pthread_mutex_unlock(&live.lock);
}

/* Waits for pid's exit and reaps it, marked reaped while it is still a
 * zombie (so its pid is never reused under a shutdown's signal). */
static int wait_marked(pid_t pid)
{
	siginfo_t info;
	int status = 0;
	while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	live_reaped(pid);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Waits for sbx-run's exit, at most RUNNER_REAP_MS, then kills it. */
static void reap(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (fd < 0 || poll(&p, 1, RUNNER_REAP_MS) != 1)
		kill(pid, SIGKILL);
	if (fd >= 0)
		close(fd);
	wait_marked(pid);
}

void runner_let_go(const char *internal_id, pid_t pid, bool reaped)
{
	if (!reaped && pid > 0)
		reap(pid);
	if (!g_server.cfg.run_retention_s && internal_id[0]) {
		int dir = runs_dir();
		/* A pending change (a speculative run's) keeps its directory
		 * until it is committed, discarded or expired. */
		if (dir >= 0 && !speculative_pending(dir, internal_id))
			sbx_remove_tree_at(dir, internal_id);
		if (dir >= 0)
			close(dir);
	}
	live_remove(pid);
	standby_run_ends();
}

void runner_forget(struct child *c)
{
	int *fds[] = { &c->events_fd, &c->err_fd };
	for (size_t i = 0; i < 2; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	runner_let_go(c->internal_id, c->pid, c->reaped);
	c->reaped = true;
}

/* Hands text (and fds, as SCM_RIGHTS with its first bytes) to sbx-run's
 * stdin, then ends it. sbx-run reads the whole request before it says
 * anything, so this never waits on it for long. */
static bool send_request(int fd, const char *text, const int *fds, size_t n_fds)
{
	size_t n = text ? strlen(text) : 0, off = 0;
	if (n_fds) {
		union {
			struct cmsghdr h;
			char space[CMSG_SPACE(sizeof(int) * 4)];
		} ctl;
		memset(&ctl, 0, sizeof(ctl));
		struct iovec iov = { (void *)text, n };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
				      .msg_controllen = CMSG_SPACE(sizeof(int) * n_fds) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
		ssize_t w;
		do
			w = sendmsg(fd, &msg, MSG_NOSIGNAL);
		while (w < 0 && errno == EINTR);
		if (w <= 0)
			return false;
		off = (size_t)w;
	}
	while (off < n) {
		ssize_t w = send(fd, text + off, n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == ENOTSOCK)
			w = write(fd, text + off, n - off);
		if (w <= 0 && errno != EINTR)
			return false;
		off += w > 0 ? (size_t)w : 0;
	}
	return true;
}

static int start_run(json_t *request, const int *fds, size_t n_fds, struct child *c, struct sbx_error *e)
{
	unsigned char rnd[12];

	if (g_server.cfg.run_retention_s)
		runner_sweep();
	memset(c, 0, sizeof(*c));
	c->pid = -1;
	c->finished_status = -1;
	c->events_fd = c->err_fd = -1;
	if (n_fds > 4) {
		sbx_error_set(e, 5, "spawn", "an execution takes at most 4 directories");
		return -1;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		sbx_error_set(e, 5, "random", "no randomness for an execution id");
		return -1;
	}
	strcpy(c->internal_id, "h");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(c->internal_id + 1 + 2 * i, 3, "%02x", rnd[i]);
	char leaf[64];
	snprintf(leaf, sizeof(leaf), "runs/%s", c->internal_id);
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_RUNNER_EXECUTIONS, leaf, c->exec_dir, sizeof(c->exec_dir));
	json_object_set_new(request, "executionId", json_string(c->internal_id));
	long long timeout = json_integer_value(json_object_get(request, "timeoutMs"));
	c->hard_deadline_ms = timeout > 0 ? sbx_mono_ms() + timeout + RUNNER_GRACE_MS + RUNNER_KILL_GRACE_MS : 0;
	char *text = json_dumps(request, JSON_COMPACT);

	/* A warm sbx-run when one is ready: its directories go over its socket. */
	struct standby warm;
	if (text && standby_take(&warm)) {
		bool sent = send_request(warm.sock, text, fds, n_fds);
		close(warm.sock);
		if (sent) {
			metrics_add(METRICS_RUN_STARTS_WARM, 1);
			c->pid = warm.pid;
			c->events_fd = warm.events_fd;
			c->err_fd = warm.err_fd;
			free(text);
			return 0;
		}
		standby_discard(&warm); /* it died waiting: this request starts one cold */
	}
	int in[2], out[2], err[2];
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
		free(text);
		sbx_error_set(e, 6, "pipe", "cannot create pipes: %s", strerror(errno));
		return -1;
	}
	c->pid = runner_spawn(false, in[0], out[1], err[1], fds, n_fds, e);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (c->pid < 0) {
		free(text);
		close(in[1]);
		close(out[0]);
		close(err[0]);
		return -1;
	}
	send_request(in[1], text, NULL, 0);
	metrics_add(METRICS_RUN_STARTS_COLD, 1);
	free(text);
	close(in[1]);
	c->events_fd = out[0];
	c->err_fd = err[0];
	return 0;
}

/* The run counts as in flight from before it takes a standby (so the pool
 * is not topped up under it) until it is let go; a failed start is let go
 * here. Once the shutdown has begun, nothing starts. */
int runner_start(json_t *request, const int *fds, size_t n_fds, struct child *c, struct sbx_error *e)
{
	pthread_mutex_lock(&live.lock);
	bool stopping = live.stopping;
	pthread_mutex_unlock(&live.lock);
	if (stopping) {
		sbx_error_set(e, 5, "shutting-down", "the runner is shutting down");
		return -1;
	}
	standby_run_begins();
	int rc = start_run(request, fds, n_fds, c, e);
	if (rc == 0 && !live_add(c->pid))
		kill(c->pid, SIGTERM); /* the shutdown began meanwhile (or no room to track it): it stops now */
	if (rc != 0) {
		standby_run_ends();
		metrics_stage_call(g_server.prog.run, false, e); /* a run that did start counts at its end */
	}
	return rc;
}

/* Handles one complete event line. */
static void on_event(struct child *c, const char *line, size_t len)
{
	json_t *ev = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
	const char *name = json_string_value(json_object_get(ev, "event"));
	if (name && !strcmp(name, "started") && !c->started) {
		c->started = true;
		metrics_gauge_add(METRICS_SANDBOXES_ACTIVE, 1);
	}
	if (name && !strcmp(name, "finished")) {
		json_decref(c->result);
		c->result = json_incref(json_object_get(ev, "result"));
		json_t *status = json_object_get(ev, "status");
		c->finished_status = json_is_integer(status) ? (int)json_integer_value(status) : -1;
	}
	if (name && c->on_event)
		c->on_event(c->on_event_arg, name, ev);
	json_decref(ev);
}

/* Keeps the last diagnostic's message. */
static void on_diag(struct child *c, const char *line, size_t len)
{
	json_t *d = json_loadb(line, len, 0, NULL);
	const char *m = json_string_value(json_object_get(d, "message"));
	if (m)
		snprintf(c->diag, sizeof(c->diag), "%s", m);
	else if (len)
		snprintf(c->diag, sizeof(c->diag), "%.*s", (int)(len < 1000 ? len : 1000), line);
	json_decref(d);
}

/* The run's end in the metrics: its sandbox gone, and an sbx-run that
 * said no result is a failed call of it. */
static void counted_end(const struct child *c)
{
	if (c->started)
		metrics_gauge_add(METRICS_SANDBOXES_ACTIVE, -1);
	metrics_stage_call(g_server.prog.run, c->result != NULL, NULL);
}

struct lines {
	char *buf;
	size_t len, cap;
	bool dropped;            /* a line over EVENT_LINE_MAX was thrown away */
};

/* Reads what fd has; calls each(line) per complete line. false at EOF. */
static bool read_lines(int fd, struct lines *l, struct child *c, void (*each)(struct child *, const char *, size_t))
{
	if (l->cap - l->len < 65536) {
		size_t cap = l->cap ? l->cap * 2 : 131072;
		char *grown = cap <= EVENT_LINE_MAX ? realloc(l->buf, cap) : NULL;
		if (!grown) {
			l->len = 0; /* an overlong line is dropped, never trusted in part */
			l->dropped = true;
		} else {
			l->buf = grown;
			l->cap = cap;
		}
	}
	ssize_t n = read(fd, l->buf + l->len, l->cap - l->len);
	if (n <= 0)
		return n < 0 && (errno == EINTR || errno == EAGAIN);
	l->len += (size_t)n;
	char *start = l->buf, *nl;
	while ((nl = memchr(start, '\n', l->len - (size_t)(start - l->buf)))) {
		each(c, start, (size_t)(nl - start));
		start = nl + 1;
	}
	l->len -= (size_t)(start - l->buf);
	memmove(l->buf, start, l->len);
	return true;
}

void runner_wait(struct child *c, bool (*tick)(void *arg), void *arg)
{
	struct lines out = { 0 }, err = { 0 };
	bool out_open = true, err_open = true;
	while (out_open || err_open) {
		long long now = sbx_mono_ms();
		bool overdue = c->hard_deadline_ms && now >= c->hard_deadline_ms;
		if (((tick && tick(arg)) || overdue) && !c->cancel_sent) {
			kill(c->pid, SIGTERM);
			c->cancel_sent = true;
			c->kill_at_ms = now + RUNNER_KILL_GRACE_MS;
		}
		/* Nothing the workload does keeps a run alive past its grace. */
		if (c->cancel_sent && !c->kill_sent && now >= c->kill_at_ms) {
			kill(c->pid, SIGKILL);
			c->kill_sent = true;
		}
		struct pollfd p[2] = { { .fd = out_open ? c->events_fd : -1, .events = POLLIN },
				       { .fd = err_open ? c->err_fd : -1, .events = POLLIN } };
		if (poll(p, 2, 100) <= 0)
			continue;
		if (p[0].revents && !read_lines(c->events_fd, &out, c, on_event))
			out_open = false;
		if (p[1].revents && !read_lines(c->err_fd, &err, c, on_diag))
			err_open = false;
		/* It ran and said so: its exit (clean-up only) is not waited
		 * for; runner_let_go reaps it once the answer is on its way. */
		if (c->result && (c->finished_status == 0 || c->finished_status == 1)) {
			free(out.buf);
			free(err.buf);
			c->exit_code = c->finished_status;
			counted_end(c);
			if (tick)
				tick(arg);
			return;
		}
	}
	free(out.buf);
	free(err.buf);
	if (out.dropped && !c->result)
		snprintf(c->diag, sizeof(c->diag), "sbx-run's result was over %u MiB (its file lists); it was not read",
			 EVENT_LINE_MAX >> 20);
	int status = wait_marked(c->pid);
	c->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	c->reaped = true;
	counted_end(c);
	if (tick)
		tick(arg);
}

void runner_free(struct child *c)
{
	if (c->events_fd >= 0)
		close(c->events_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	json_decref(c->result);
	c->result = NULL;
	c->events_fd = c->err_fd = -1;
}

json_t *runner_api_result(const struct api_exec *x, json_t *res)
{
	char kernel[200];
	snprintf(kernel, sizeof(kernel), "ephemeral:%s", x->id);
	json_t *snapshot = json_object_get(res, "workspaceSnapshot"), *ref = json_null();
	if (json_is_object(snapshot))
		ref = json_pack("{s:O,s:O,s:O,s:O}", "pool", json_object_get(snapshot, "pool"), "digest",
				json_object_get(snapshot, "digest"), "size", json_object_get(snapshot, "size"),
				"mediaType", json_object_get(snapshot, "mediaType"));
	json_t *env = json_object_get(res, "environmentVariables");
	json_t *out = json_pack("{s:s,s:O,s:s,s:o,s:s,s:O,s:O,s:s,s:s,s:s,s:O,s:s,s:s,s:s,s:s,s:O,s:O}",
				"cgroupMode", "none", "createdFiles", json_object_get(res, "createdFiles"),
				"environmentRevisionId", x->env_revision, "environmentVariables",
				json_is_object(env) ? json_incref(env) : json_object(), "executionId", x->id,
				"exitCode", json_object_get(res, "exitCode"), "finishedAt",
				json_object_get(res, "finishedAt"), "kernelId", kernel, "kernelMode", "ephemeral",
				"language", x->language, "modifiedFiles", json_object_get(res, "modifiedFiles"),
				"networkPolicy", x->network_policy, "networkAccessRevision", x->network_revision,
				"runnerVersion", g_server.version, "sandbox", "bubblewrap", "startedAt",
				json_object_get(res, "startedAt"), "workingDirectory",
				json_object_get(res, "workingDirectory"));
	/* An extension: whether the output budget cut stdout or stderr (the
	 * upstream shows only the marker). */
	json_object_set_new(out, "truncated", json_boolean(json_is_true(json_object_get(res, "truncated"))));
	if (json_is_object(json_object_get(res, "limits"))) /* the bounds that held, and by what */
		json_object_set(out, "limits", json_object_get(res, "limits"));
	if (json_is_array(json_object_get(res, "denials"))) /* every refusal the run met (sbx-run(1) DENIALS) */
		json_object_set(out, "denials", json_object_get(res, "denials"));
	if (json_is_object(json_object_get(res, "speculative"))) { /* its pending change (sbx-httpd(8)) */
		json_t *pending = json_deep_copy(json_object_get(res, "speculative"));
		json_object_del(pending, "changesFile"); /* a host path */
		json_object_set_new(out, "speculative", pending);
		speculative_ended();
	}
	if (!out) {
		json_decref(ref);
		return NULL;
	}
	if (x->started_at[0]) /* the instant /status reported, not sbx-run's own */
		json_object_set_new(out, "startedAt", json_string(x->started_at));
	if (json_is_null(json_object_get(out, "exitCode")))
		json_object_set_new(out, "exitCode", json_integer(-1));
	if (!json_is_null(ref))
		json_object_set_new(out, "workspaceSnapshot", ref);
	return out;
}

int runner_open_streams(const struct child *c, int fds[2])
{
	static const char *const names[2] = { "stdout", "stderr" };
	char runs[PATH_MAX + 64], rel[PATH_MAX];
	fds[0] = fds[1] = -1;
	sbx_data_path(g_server.cfg.data_dir, SBX_DATA_RUNNER_EXECUTIONS, "runs", runs, sizeof(runs));
	int dir = runs_dir();
	for (int i = 0; i < 2 && dir >= 0; i++) {
		struct stat st;
		json_t *ref = json_object_get(json_object_get(c->result, "streams"), names[i]);
		/* The file sbx-run reported, opened below the runs directory with
		 * no symlink, whole: its size is the one it reported. */
		const char *path = json_string_value(json_object_get(ref, "path"));
		if (!path || sbx_path_below(runs, path, rel, sizeof(rel)) != 0 || !rel[0])
			break;
		fds[i] = sbx_open_beneath(dir, rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC, SBX_BENEATH_NO_SYMLINKS);
		if (fds[i] < 0 || fstat(fds[i], &st) != 0 || !S_ISREG(st.st_mode) ||
		    st.st_size != json_integer_value(json_object_get(ref, "bytes")))
			break;
	}
	if (dir >= 0)
		close(dir);
	if (fds[0] >= 0 && fds[1] >= 0)
		return 0;
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fds[0] = fds[1] = -1;
	return -1;
}

json_t *runner_stream_text(int fd, size_t cap, bool *cut)
{
	struct stat st;
	*cut = false;
	if (fstat(fd, &st) != 0 || st.st_size < 0)
		return json_string("");
	/* Escaping never shrinks: cap bytes of the file are enough to fill cap. */
	size_t len = (size_t)st.st_size < cap ? (size_t)st.st_size : cap;
	char *text = malloc(len + 1);
	size_t got = 0;
	for (ssize_t n; text && got < len && (n = pread(fd, text + got, len - got, (off_t)got)) > 0;)
		got += (size_t)n;
	/* What fits in cap bytes of JSON, whole characters only. */
	size_t keep = text ? sbx_json_escaped_prefix(text, got, cap) : 0;
	*cut = keep < (size_t)st.st_size;
	json_t *v = text ? sbx_json_stringn_lossy(text, keep) : json_string("");
	free(text);
	return v;
}
