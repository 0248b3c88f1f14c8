/* seccomp_listen.c — receiving the seccomp listener and answering its
 * notifications. Nothing here waits on the workload: the listener is read
 * only when poll says a notification is pending (which the kernel then
 * hands over without blocking), and the answer never lets a call through. */
#include "seccomp_listen.h"
#include "run.h"
#include "../lib/fd_pass.h"
#include "../lib/seccomp_table.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#define ANSWER_BATCH 64 /* notifications per call before the loop sees its other fds */

void run_seccomp_open(struct run_seccomp *s)
{
	int pair[2];
	memset(s, 0, sizeof(*s));
	s->sock = s->sandbox_end = s->listener = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
		return;
	s->sock = pair[0];
	s->sandbox_end = pair[1];
}

/* A seccomp listener is an anonymous inode of that name. */
static bool is_listener(int fd)
{
	char link[64], target[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:seccomp notify") == 0;
}

void run_seccomp_receive(struct run *r)
{
	struct run_seccomp *s = &r->seccomp;
	/* Called when poll says the socket is readable: one message is all
	 * there is (the listener, or EOF when the launch reports nothing). */
	int fd = sbx_fd_recv(s->sock);
	if (fd >= 0 && is_listener(fd) && s->listener < 0) {
		s->listener = fd;
		s->received = true;
		/* Wake us on the workload's CPU: a round trip in a few µs. */
		__u64 flags = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
		(void)ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags);
	} else if (fd >= 0) {
		close(fd);
	}
	close(s->sock);
	s->sock = -1;
}

/* The syscall numbers of the table's rows, resolved once. */
static int row_nr(size_t i)
{
	static int nr[256];
	static bool resolved;
	if (!resolved) {
		for (size_t k = 0; k < sbx_seccomp_rules_len && k < 256; k++)
			nr[k] = seccomp_syscall_resolve_name(sbx_seccomp_rules[k].syscall);
		resolved = true;
	}
	return i < 256 ? nr[i] : __NR_SCMP_ERROR;
}

/* Whether row's argument pattern holds for args (as add_row compiles it). */
static bool row_matches(const struct sbx_seccomp_rule *row, const __u64 *args)
{
	uint32_t a0 = (uint32_t)args[0];
	switch (row->match) {
	case SBX_MATCH_ANY: return true;
	case SBX_MATCH_CLONE_NEWNS_FLAGS:
		return (args[0] & (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
				   CLONE_NEWPID | CLONE_NEWNET)) != 0;
	case SBX_MATCH_IOCTL_REQUEST: return (uint32_t)args[1] == (uint32_t)row->value;
	case SBX_MATCH_PERSONALITY_SET: return args[0] > 0xffffffffull || (a0 != 0 && a0 != 0xffffffffu);
	case SBX_MATCH_SOCKET_INET: return a0 == AF_INET || a0 == AF_INET6;
	case SBX_MATCH_SOCKET_OTHER: return a0 != AF_UNIX && a0 != AF_INET && a0 != AF_INET6;
	}
	return false;
}

static const struct sbx_seccomp_rule *find_row(int nr, const __u64 *args, unsigned profile_bit)
{
	for (size_t i = 0; i < sbx_seccomp_rules_len; i++) {
		const struct sbx_seccomp_rule *row = &sbx_seccomp_rules[i];
		if (row_nr(i) == nr && (row->profiles & profile_bit) && sbx_seccomp_rule_reported(row) &&
		    row_matches(row, args))
			return row;
	}
	return NULL;
}

/* The record's target: the call, with the argument that made it refused. */
static void describe(const struct sbx_seccomp_rule *row, const __u64 *args, char *what, size_t size)
{
	uint32_t a0 = (uint32_t)args[0];
	switch (row->match) {
	case SBX_MATCH_SOCKET_INET: snprintf(what, size, "%s(%s)", row->syscall, a0 == AF_INET ? "AF_INET" : "AF_INET6"); break;
	case SBX_MATCH_CLONE_NEWNS_FLAGS: snprintf(what, size, "%s(CLONE_NEW*)", row->syscall); break;
	case SBX_MATCH_IOCTL_REQUEST:
		snprintf(what, size, "ioctl(%s)", row->value == 0x5412 ? "TIOCSTI" : "TIOCLINUX");
		break;
	default: snprintf(what, size, "%s", row->syscall); break;
	}
}

static void record(struct run *r, const struct sbx_seccomp_rule *row, const struct seccomp_notif *n, int profile)
{
	char what[64], policy[64], remedy[256];
	describe(row, n->data.args, what, sizeof(what));
	snprintf(policy, sizeof(policy), "seccomp profile %s", sbx_seccomp_profile_name(profile));
	if (row->profiles != SBX_PROFILE_ALL)
		snprintf(remedy, sizeof(remedy), "%s",
			 "networkPolicy: domain-allowlist (inet sockets through the egress gateway, to the "
			 "allowlisted hosts only)");
	else
		snprintf(remedy, sizeof(remedy), "not available in the sandbox, whatever the settings: %s", row->reason);
	run_denial_note(r, "seccomp", what, 1, policy, remedy,
			json_pack("{s:s,s:s,s:s}", "syscall", row->syscall, "errno", strerrorname_np(row->error),
				  "reason", row->reason));
}

/* The profile the launch used (its plan record), baseline when unknown. */
static int run_profile(const struct run *r)
{
	const char *name = json_string_value(json_object_get(r->provenance, "seccompProfile"));
	int p = name ? sbx_seccomp_profile_from_name(name) : -1;
	return p >= 0 ? p : SBX_SECCOMP_BASELINE;
}

void run_seccomp_answer(struct run *r)
{
	struct run_seccomp *s = &r->seccomp;
	int profile = run_profile(r);
	for (int i = 0; i < ANSWER_BATCH && s->listener >= 0; i++) {
		/* RECV waits for a notification; before Linux 6.11 it waits for
		 * ever once the workload is gone (hung up). Only a pending one is
		 * received, and a hung-up listener is done: no process can join a
		 * filter none holds, and the loop's poll would keep waking on it. */
		struct pollfd p = { .fd = s->listener, .events = POLLIN };
		if (poll(&p, 1, 0) != 1)
			return;
		if (!(p.revents & POLLIN)) {
			if (p.revents & (POLLHUP | POLLERR)) {
				close(s->listener);
				s->listener = -1;
			}
			return;
		}
		struct seccomp_notif n;
		memset(&n, 0, sizeof(n));
		if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_RECV, &n) != 0)
			return; /* ENOENT: the caller died meanwhile */
		const struct sbx_seccomp_rule *row =
			n.data.arch == seccomp_arch_native() ? find_row(n.data.nr, n.data.args, SBX_PROFILE_BIT(profile)) : NULL;
		/* Never SECCOMP_USER_NOTIF_FLAG_CONTINUE: every answer refuses. */
		struct seccomp_notif_resp resp = { .id = n.id, .error = -(row ? row->error : EPERM) };
		(void)ioctl(s->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		s->answered++;
		if (row)
			record(r, row, &n, profile);
		else
			run_denial_note(r, "seccomp", "(unlisted call)", 1, "seccomp", "", NULL);
		if (s->answered >= RUN_SECCOMP_REPORTS_MAX) {
			close(s->listener);
			s->listener = -1;
			s->capped = true;
		}
	}
}

json_t *run_seccomp_report(const struct run_seccomp *s)
{
	return json_pack("{s:b,s:I,s:b}", "reporting", s->received, "answered", (json_int_t)s->answered, "capped",
			 s->capped);
}

void run_seccomp_close(struct run_seccomp *s)
{
	int *fds[] = { &s->sock, &s->sandbox_end, &s->listener };
	for (size_t i = 0; i < 3; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}
