/* probe_as.c — the probe run as an unprivileged uid for what root starts:
 * root forks a child that drops for good to SBX_PROBE_UID, which nothing
 * else runs as, probes, and hands back the answer. */
#include "probe_as.h"
#include "io.h"
#include "json.h"
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define ANSWER_CAP (256u << 10)
#define INCONCLUSIVE 3 /* the child's status: an answer, not to be cached */

/* An answer that says why no probe ran, in the probe's own shape. */
static json_t *failed(const char *requested, const char *why)
{
	struct sbx_probe_result r;

	memset(&r, 0, sizeof(r));
	r.uid = geteuid();
	r.probed_at = time(NULL);
	r.reason = SBX_PROBE_SANDBOX_UNUSABLE;
	snprintf(r.requested, sizeof(r.requested), "%s", requested);
	snprintf(r.detail, sizeof(r.detail), "%s", why);
	sbx_host_facts_read(NULL, &r.host);
	return sbx_probe_to_json(&r);
}

/* Reads the child's answer until EOF or the deadline; -1 past it. */
static char *read_answer(int fd, int deadline_ms, size_t *len)
{
	char *buf = malloc(ANSWER_CAP + 1);
	*len = 0;
	while (buf) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int n = poll(&pfd, 1, deadline_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the deadline: the child is killed below */
		ssize_t got = read(fd, buf + *len, ANSWER_CAP - *len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got == 0) {
			buf[*len] = '\0';
			return buf;
		}
		if (got < 0 || (*len += (size_t)got) == ANSWER_CAP)
			break;
	}
	free(buf);
	return NULL;
}

json_t *sbx_probe_json_as(const struct sbx_run_as *as, const char *requested, int timeout_ms,
			  struct sbx_probe_result *r, bool *trusted)
{
	struct sbx_error e;
	int p[2];

	*trusted = false;
	if (!as || !as->switch_user) {
		sbx_probe_run(requested, timeout_ms, r);
		*trusted = !r->inconclusive;
		return sbx_probe_to_json(r);
	}
	/* Not the uid itself: its own processes (a broker job, the gateway, a
	 * workspace's) could stop or signal the probe's bwraps. A uid no one
	 * runs as answers for all of them (the answer never depends on which
	 * unprivileged uid asks), in the sandbox group. */
	struct sbx_run_as prober = *as;
	prober.uid = SBX_PROBE_UID;
	memset(r, 0, sizeof(*r));
	r->probed_at = time(NULL);
	if (pipe2(p, O_CLOEXEC) != 0)
		return failed(requested, "cannot probe as the sandbox uid: pipe failed");
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return failed(requested, "cannot probe as the sandbox uid: fork failed");
	}
	if (pid == 0) {
		close(p[0]);
		struct sbx_probe_result mine;
		if (sbx_run_as_switch(&prober, &e) != 0)
			_exit(1);
		sbx_probe_run(requested, timeout_ms, &mine);
		json_t *answer = sbx_probe_to_json(&mine);
		char *text = json_dumps(answer, JSON_COMPACT);
		if (!text || sbx_write_all(p[1], text, strlen(text)) != 0)
			_exit(1);
		_exit(mine.inconclusive ? INCONCLUSIVE : 0);
	}
	close(p[1]);
	size_t len = 0;
	/* Other processes of that uid can stop or slow the child: its whole
	 * probe (five bwraps at most) gets a deadline, then it is killed. */
	if (timeout_ms <= 0)
		timeout_ms = SBX_PROBE_TIMEOUT_MS;
	char *text = read_answer(p[0], 6 * timeout_ms, &len);
	close(p[0]);
	if (!text)
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	bool exited = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == INCONCLUSIVE);
	json_t *answer = text && exited ? sbx_json_parse(text, len, "probe", &e) : NULL;
	free(text);
	if (!answer) {
		char why[128];
		snprintf(why, sizeof(why), "cannot probe as uid %u: the probing child failed or timed out",
			 (unsigned)prober.uid);
		return failed(requested, why);
	}
	*trusted = WEXITSTATUS(status) == 0;
	return answer;
}
