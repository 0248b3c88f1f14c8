/* egress_denials.c — the gateway's refusals of this run as "egress"
 * denials: its audit lines whose peerPid is the sandbox's bridge (pid 1's
 * first child), each a record per host:port with its count and remedy. */
#include "egress_denials.h"
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#define QUICK_MS 5        /* while the bridge is not known yet: it is forked after the sandbox's setup */
#define QUICK_TICKS 1000  /* then every TICK_MS all the same */
#define TICK_MS 100
#define FLUSH_WAIT_S 2    /* for the gateway to write what it held */
#define TICK_LINES 2048   /* of ours parsed per tick */

static void arm(int timer, int ms)
{
	struct itimerspec t = { .it_interval = { .tv_nsec = ms * 1000000L }, .it_value = { .tv_nsec = ms * 1000000L } };
	timerfd_settime(timer, 0, &t, NULL);
}

void run_egress_watch_start(struct run *r)
{
	struct run_egress_watch *w = &r->egress_watch;
	char log[sizeof(w->sock)];
	memset(w, 0, sizeof(*w));
	w->timer = -1;
	if (!r->req.egress_policy) /* no gateway of ours: a caller's socket, or none */
		return;
	if (r->secret_gateway_dir[0]) {
		snprintf(log, sizeof(log), "%s/audit.log", r->secret_gateway_dir);
		snprintf(w->sock, sizeof(w->sock), "%s/gw.sock", r->secret_gateway_dir);
	} else {
		snprintf(log, sizeof(log), "%s/%s.log", r->egress_dir, r->req.egress_revision);
		snprintf(w->sock, sizeof(w->sock), "%s/%s.sock", r->egress_dir, r->req.egress_revision);
	}
	if (audit_follow_open(&w->log, log) != 0 ||
	    (w->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) < 0) {
		run_event("warning", r, json_pack("{s:s,s:s}", "code", "egress-denials-unavailable", "message",
						  "the gateway's audit log cannot be followed: egress refusals are not in denials"));
		audit_follow_close(&w->log);
		return;
	}
	arm(w->timer, QUICK_MS);
	w->on = true;
}

int run_egress_watch_fd(const struct run *r)
{
	return r->egress_watch.on ? r->egress_watch.timer : -1;
}

/* The sandbox's pid 1 (bwrap) forks one process, which execs (through
 * sbx-seccomp-notify, same pid) sbx-egress-bridge: its first child. */
static void find_bridge(struct run *r)
{
	struct run_egress_watch *w = &r->egress_watch;
	char path[64], buf[32];
	if (w->bridge || r->sb.init_pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)r->sb.init_pid, (int)r->sb.init_pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	char *end;
	long pid = strtol(buf, &end, 10);
	if (end != buf && pid > 0 && pid <= INT32_MAX)
		w->bridge = (pid_t)pid;
}

/* What the run can do about a refusal: by its rule (cause), else by what
 * the gateway answered. */
static const char *remedy(const char *cause, int status, bool secret)
{
	if (secret)
		return "a secret's placeholder goes only to the hosts it is bound to, in its own field, over HTTPS: "
		       "see the reason";
	if (cause && !strcmp(cause, "not-allowed"))
		return "add the host to the allowlist: network.allowedDomains "
		       "(permissionEpoch.networkAccess.allowedDomains over HTTP)";
	if (cause && !strcmp(cause, "special-address"))
		return "private, loopback and other special-purpose addresses are never reachable unless the policy "
		       "allows private network access (allowPrivateNetwork)";
	if (cause && !strcmp(cause, "ip-literal"))
		return "name the host: the allowlist holds domain names, never IP addresses";
	if (cause && !strcmp(cause, "unresolved"))
		return "the name did not resolve (the gateway resolves it; the sandbox has no DNS): check its spelling";
	switch (status) {
	case 400: return "send a well-formed proxy request: CONNECT host:port, or an absolute http:// URI";
	case 408: return "send the whole request head within the gateway's head timeout";
	case 429:
	case 0: return "open fewer connections at once: the gateway caps each sandbox's concurrent connections";
	case 502:
	case 504: return "not a policy refusal: the host is allowed but could not be reached on that port";
	default: return "see the reason";
	}
}

static const char *decision_of(int status)
{
	switch (status) {
	case 400: return "malformed";
	case 403: return "denied";
	case 408: return "timeout";
	case 429:
	case 0: return "busy";
	default: return "failed";
	}
}

/* A string field, at most max bytes of it, or "". */
static json_t *capped(const json_t *o, const char *key, size_t max)
{
	const char *s = json_string_value(json_object_get(o, key));
	size_t n = s ? strlen(s) : 0;
	return json_stringn(s ? s : "", n < max ? n : max);
}

/* One audit line: a refusal of our bridge's (one, or a summary's count)
 * becomes a denial. True when it was ours. */
static bool egress_line(void *arg, const char *text, size_t len)
{
	struct run *r = arg;
	char key[40];
	int k = snprintf(key, sizeof(key), "\"peerPid\":%d", (int)r->egress_watch.bridge);
	const char *at = memmem(text, len, key, (size_t)k);
	/* Most lines are others': skipped without parsing. */
	if (!at || at + k >= text + len || (at[k] != ',' && at[k] != '}'))
		return false;
	json_t *a = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	const char *decision = json_string_value(json_object_get(a, "decision"));
	if (!a || json_integer_value(json_object_get(a, "peerPid")) != r->egress_watch.bridge || !decision ||
	    !strcmp(decision, "allowed")) {
		json_decref(a);
		return a != NULL;
	}
	bool summary = !strcmp(decision, "refusals"), mixed = json_is_true(json_object_get(a, "mixedTargets"));
	json_int_t count = summary ? json_integer_value(json_object_get(a, "count")) : 1;
	int status = (int)json_integer_value(json_object_get(a, "status"));
	json_int_t given_port = json_integer_value(json_object_get(a, "port"));
	int port = given_port > 0 && given_port <= 65535 ? (int)given_port : 0;
	const char *cause = json_string_value(json_object_get(a, "cause"));
	json_t *host = capped(a, "host", 300), *detail = json_object();
	char what[sizeof(r->denials.d[0].what)], policy[sizeof(r->denials.d[0].policy)];
	if (mixed)
		snprintf(what, sizeof(what), "(several targets)");
	else if (json_string_length(host) && port > 0)
		snprintf(what, sizeof(what), "%.150s:%d", json_string_value(host), port);
	else if (json_string_length(host)) /* refused before the authority was parsed: as the request named it */
		snprintf(what, sizeof(what), "%.150s", json_string_value(host));
	else
		snprintf(what, sizeof(what), "(no target)"); /* refused before a request named one */
	snprintf(policy, sizeof(policy), "egress allowlist %s", r->req.egress_revision);
	json_object_set_new(detail, "host", host);
	json_object_set_new(detail, "port", json_integer(port));
	json_object_set_new(detail, "status", json_integer(status));
	json_object_set_new(detail, "decision", json_string(summary ? decision_of(status) : decision));
	json_object_set_new(detail, "reason", capped(a, "reason", 600));
	if (cause)
		json_object_set_new(detail, "cause", capped(a, "cause", 40));
	if (json_object_get(a, "secret"))
		json_object_set_new(detail, "secret", capped(a, "secret", 64));
	if (count > 0 && count <= INT64_MAX / 2)
		run_denial_note(r, "egress", what, (uint64_t)count, policy,
				remedy(mixed ? NULL : cause, status, json_object_get(a, "secret") != NULL), detail);
	else
		json_decref(detail);
	json_decref(a);
	return true;
}

void run_egress_watch_tick(struct run *r)
{
	struct run_egress_watch *w = &r->egress_watch;
	uint64_t expired;
	if (!w->on || read(w->timer, &expired, sizeof(expired)) < 0)
		return;
	if (!w->bridge) {
		find_bridge(r);
		if (w->bridge || ++w->searches == QUICK_TICKS)
			arm(w->timer, TICK_MS);
	}
	if (w->bridge)
		audit_follow_read(&w->log, AUDIT_FOLLOW_TICK_BYTES, TICK_LINES, egress_line, r);
}

/* Asks the gateway to write the counts it holds for the bridge's pid (its
 * refusals past the log's burst); waits a bounded time for the answer. As
 * root, the socket (0660, the sandbox user's) is opened by path first and
 * reached through /proc/self/fd with the owner's fsuid, so no directory
 * above it needs to be open to that uid. */
static void ask_flush(const struct run_egress_watch *w)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval limit = { .tv_sec = FLUSH_WAIT_S };
	struct stat st;
	char request[5] = { 1 }, done = 0;
	int32_t pid = (int32_t)w->bridge;
	memcpy(request + 1, &pid, sizeof(pid));
	int path = open(w->sock, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int fd = path >= 0 && fstat(path, &st) == 0 && S_ISSOCK(st.st_mode) ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)
									     : -1;
	if (fd >= 0) {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", path);
		/* A blocking connect waits for room in the backlog, bounded by these. */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
		bool as_owner = geteuid() == 0 && st.st_uid != 0;
		if (as_owner)
			setfsuid(st.st_uid);
		int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		if (as_owner)
			setfsuid(0);
		if (rc == 0 && send(fd, request, sizeof(request), MSG_NOSIGNAL) == (ssize_t)sizeof(request))
			(void)!recv(fd, &done, 1, 0);
		close(fd);
	}
	if (path >= 0)
		close(path);
}

void run_egress_watch_finish(struct run *r)
{
	struct run_egress_watch *w = &r->egress_watch;
	if (!w->on)
		return;
	find_bridge(r); /* too late unless the sandbox's pid 1 is still there */
	if (w->bridge) {
		ask_flush(w);
		for (int round = 0;
		     round < 64 && audit_follow_read(&w->log, AUDIT_FOLLOW_TICK_BYTES, TICK_LINES, egress_line, r) > 0;
		     round++)
			;
	}
	if (w->log.gaps)
		run_event("warning", r,
			  json_pack("{s:s,s:s,s:I}", "code", "egress-audit-gap", "message",
				    "the gateway's audit log rotated past lines not yet read: egress denials may be undercounted",
				    "rotations", (json_int_t)w->log.gaps));
	audit_follow_close(&w->log);
	close(w->timer);
	w->timer = -1;
	w->on = false;
}
