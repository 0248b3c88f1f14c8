/* supervise.c — the loop while a sandbox runs: the code goes to stdin,
 * stdout and stderr to the output files, the quota is checked every 100 ms,
 * and the deadline or a cancel stops the sandbox (SIGTERM to all of it, a
 * grace, then SIGKILL of its pid namespace). Returns once all of it is gone. */
#include "run.h"
#include "../lib/clock.h"
#include "../lib/exitcodes.h"
#include "../lib/quota.h"
#include "../lib/quota_watch.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

enum { P_OUT, P_ERR, P_IN, P_INFO, P_EXIT, P_SIGNAL, P_CHANNEL, P_DENIALS, P_NOTIFY, P_EGRESS, P_COUNT };

enum sbx_quota_state run_quota_check(struct run *r, bool during)
{
	enum sbx_quota_state q = during && r->spec.dir >= 0
					 ? run_speculative_quota(r, &r->quota_bytes)
					 : sbx_quota_check_at(r->req.ws.fd, r->req.max_workspace_bytes,
							      r->req.max_workspace_files, &r->quota_bytes);
	sbx_quota_breach(q, during, r->req.max_workspace_bytes, r->req.max_workspace_files, r->quota_why,
			 sizeof(r->quota_why));
	if (q != SBX_QUOTA_FITS)
		r->quota_state = q;
	return q;
}

/* Reads what a pipe holds into the output; false at EOF. */
static bool pump(struct run *r, int *fd, int stream, struct sbx_error *e, int *failed)
{
	char buf[65536];
	for (int rounds = 0; rounds < 16; rounds++) {
		ssize_t n = read(*fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0) {
			close(*fd);
			*fd = -1;
			return false;
		}
		if (sbx_output_add(&r->out, stream, buf, (size_t)n, e) != 0)
			*failed = 1;
	}
	return true;
}

/* Writes the next part of the code; stdin closes when done (EPIPE is fine). */
static void feed(struct run *r, size_t *sent)
{
	while (r->sb.in >= 0 && *sent < r->req.code_len) {
		ssize_t n = write(r->sb.in, r->req.code + *sent, r->req.code_len - *sent);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) /* EPIPE: the workload stopped reading */
			break;
		*sent += (size_t)n;
	}
	if (r->sb.in >= 0) {
		close(r->sb.in);
		r->sb.in = -1;
	}
}

static void stop(struct run *r, bool at_once, long long *grace_end)
{
	if (*grace_end)
		return;
	if (at_once || r->grace_ms == 0) {
		sbx_sandbox_kill(&r->sb);
		sbx_cgroup_kill(&r->cg);
		*grace_end = -1;
		return;
	}
	sbx_sandbox_signal_all(&r->sb, SIGTERM);
	*grace_end = sbx_mono_ms() + r->grace_ms;
}

int run_supervise(struct run *r, struct sbx_error *e)
{
	long long start = sbx_mono_ms(), next_quota = start + SBX_QUOTA_INTERVAL_MS, grace_end = 0;
	/* timeoutMs is exact: the first signal at N ms, SIGKILL at N + grace. */
	long long deadline = r->req.timeout_ms ? start + r->req.timeout_ms : 0;
	/* A platform deadline (a job's wall clock) is met a reserve early (at
	 * most half of it), so the worker can flush a checkpoint in the grace. */
	if (r->platform_deadline_ms) {
		long long half = r->platform_deadline_ms / 2;
		long long platform = r->started_mono_ms + r->platform_deadline_ms - (r->reserve_ms < half ? r->reserve_ms : half);
		if (!deadline || platform < deadline) {
			deadline = platform;
			r->stopped_for_platform = true; /* reported only if it is what ends the run */
		}
	}
	size_t sent = 0;
	bool exited = false;
	int failed = 0;

	feed(r, &sent);
	while (!exited || r->sb.out >= 0 || r->sb.err >= 0) {
		struct pollfd p[P_COUNT];
		int fds[P_COUNT] = { r->sb.out, r->sb.err, r->sb.in, r->sb.info, exited ? -1 : r->sb.pidfd, r->signal_fd,
				     r->worker.fd, r->seccomp.sock, r->seccomp.listener,
				     exited ? -1 : run_egress_watch_fd(r) };
		short ev[P_COUNT] = { POLLIN, POLLIN, POLLOUT, POLLIN, POLLIN, POLLIN, POLLIN, POLLIN, POLLIN, POLLIN };
		for (int i = 0; i < P_COUNT; i++)
			p[i] = (struct pollfd){ .fd = fds[i], .events = ev[i] };
		long long now = sbx_mono_ms(), wake = exited ? now + 1000 : next_quota;
		if (deadline && !grace_end && deadline < wake)
			wake = deadline;
		if (grace_end > 0 && grace_end < wake)
			wake = grace_end;
		if (r->worker.pending_progress) {
			long long due = now + r->worker.last_progress_ms + r->req.caps.progress_interval_ms - run_now_ms();
			if (due < wake)
				wake = due;
		}
		int r_ = poll(p, P_COUNT, wake > now ? (int)(wake - now) : 0);
		if (r_ < 0 && errno != EINTR)
			break;
		now = sbx_mono_ms();
		if (p[P_OUT].revents)
			pump(r, &r->sb.out, 0, e, &failed);
		if (p[P_ERR].revents)
			pump(r, &r->sb.err, 1, e, &failed);
		if (p[P_IN].revents)
			feed(r, &sent);
		if (p[P_INFO].revents)
			sbx_sandbox_read_info(&r->sb);
		if (p[P_DENIALS].revents)
			run_seccomp_receive(r);
		if (p[P_NOTIFY].revents)
			run_seccomp_answer(r);
		if (p[P_EGRESS].revents)
			run_egress_watch_tick(r);
		run_denials_flush(r, false);
		if (p[P_CHANNEL].revents && worker_read(r) != WORKER_OK && !grace_end) {
			/* A violation or a hard cap: no grace for a hostile worker. */
			r->violated = r->worker.outcome == WORKER_VIOLATION;
			r->exhausted = r->worker.outcome == WORKER_EXHAUSTED;
			stop(r, true, &grace_end);
		}
		worker_tick(r, false);
		if (p[P_EXIT].revents)
			exited = true;
		if (p[P_SIGNAL].revents) {
			struct signalfd_siginfo si;
			if (read(r->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si) && !exited) {
				if (r->job && !r->timed_out && !r->quota_hit && !r->too_deep) {
					r->timed_out = r->stopped_for_platform = true; /* the platform ends the job */
					run_job_terminated(r);
				} else if (!r->job) {
					r->cancelled = !r->timed_out && !r->quota_hit && !r->too_deep;
				}
				stop(r, false, &grace_end);
			}
		}
		if (exited && r_ == 0) /* pipes held open past the exit: give up on them */
			break;
		if (!exited && !grace_end && deadline && now >= deadline) {
			r->timed_out = true;
			stop(r, false, &grace_end);
		}
		if (!exited && grace_end > 0 && now >= grace_end) {
			sbx_sandbox_kill(&r->sb);
			sbx_cgroup_kill(&r->cg);
			grace_end = -1;
		}
		if (!exited && !grace_end && now >= next_quota) {
			next_quota = now + SBX_QUOTA_INTERVAL_MS;
			uint64_t scratch_bytes;
			enum sbx_quota_state q = run_quota_check(r, true);
			if (q != SBX_QUOTA_FITS) {
				r->quota_hit = sbx_quota_over(q);
				r->too_deep = q == SBX_QUOTA_TOO_DEEP; /* bytes down there would hide from the quota */
				stop(r, true, &grace_end); /* no grace: every ms writes more */
			} else if (r->worker.scratch_fd >= 0 &&
				   sbx_quota_exceeded_at(r->worker.scratch_fd, r->req.caps.scratch_bytes, &scratch_bytes)) {
				r->exhausted = true;
				r->worker.outcome = WORKER_EXHAUSTED;
				snprintf(r->worker.why, sizeof(r->worker.why),
					 "scratch holds %llu bytes, more than caps.scratchBytes (%llu)",
					 (unsigned long long)scratch_bytes, (unsigned long long)r->req.caps.scratch_bytes);
				stop(r, true, &grace_end);
			}
		}
	}
	if (!exited || grace_end)
		sbx_sandbox_kill(&r->sb); /* never leave anything behind */
	r->wait_status = sbx_sandbox_reap(&r->sb);
	return failed ? -1 : 0;
}
