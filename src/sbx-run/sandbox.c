/* sandbox.c — start, identify, signal and reap a sandbox. */
#include "sandbox.h"
#include "../lib/exitcodes.h"
#include "../lib/host_dir.h"
#include "../lib/io.h"
#include "../lib/spawn.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
}

#define MAX_DIR_FDS 8

/* The spec as sbx-launch sees it: each host directory given as "fd:N" (an
 * fd of this process) is handed on and renumbered from first. */
static json_t *spec_for_child(const json_t *spec, int first, int *fds, size_t *n)
{
	static const char *const fields[][2] = { { "workspace", NULL }, { "readOnlyWorkspace", NULL },
						 { "scratch", NULL }, { "environment", "prefix" },
						 { "skills", "root" }, { "workspaceOverlay", NULL } };
	json_t *copy = json_deep_copy(spec);
	*n = 0;
	for (size_t i = 0; copy && i < sizeof(fields) / sizeof(fields[0]); i++) {
		json_t *holder = fields[i][1] ? json_object_get(copy, fields[i][0]) : copy;
		const char *key = fields[i][1] ? fields[i][1] : fields[i][0];
		int fd;
		if (!json_is_object(holder) || !sbx_host_dir_fd_ref(json_string_value(json_object_get(holder, key)), &fd))
			continue;
		char ref[32];
		snprintf(ref, sizeof(ref), "fd:%d", first + (int)*n);
		fds[(*n)++] = fd;
		json_object_set_new(holder, key, json_string(ref));
	}
	return copy;
}

int sbx_sandbox_hold(const int *cgroup_procs_fds, size_t n_cgroup_procs, struct sbx_spawn_holder *h,
		     struct sbx_error *e)
{
	struct sbx_spawn s = { .new_session = true, .die_with_parent = true, .cgroup_procs_fds = cgroup_procs_fds,
			       .n_cgroup_procs = n_cgroup_procs };
	return sbx_spawn_hold(&s, h, e);
}

int sbx_sandbox_start(const char *launch, const json_t *spec, struct sbx_spawn_holder *holder, int channel_fd,
		      int denials_fd, struct sbx_sandbox *sb, struct sbx_error *e)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, info[2] = { -1, -1 }, plan[2] = { -1, -1 };
	int memfd = memfd_create("sbx-spec", MFD_CLOEXEC);
	/* fds 3.. of sbx-launch: the spec, info, the channel (if any), the
	 * plan, the denials socket (if any), then directories. */
	int fds[5 + MAX_DIR_FDS];
	size_t base = 3 + (channel_fd >= 0) + (denials_fd >= 0), n_dirs = 0;
	json_t *child_spec = spec_for_child(spec, 3 + (int)base, fds + base, &n_dirs);
	char *text = child_spec ? json_dumps(child_spec, JSON_COMPACT) : NULL;
	json_decref(child_spec);

	memset(sb, 0, sizeof(*sb));
	sb->pid = -1;
	sb->pidfd = sb->init_pidfd = sb->in = sb->out = sb->err = sb->info = sb->plan = -1;
	if (memfd < 0 || !text || sbx_write_all(memfd, text, strlen(text)) != 0 || lseek(memfd, 0, SEEK_SET) != 0 ||
	    pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(info, O_CLOEXEC) ||
	    pipe2(plan, O_CLOEXEC)) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "spawn-failed", "preparing the sandbox: %s", strerror(errno));
		goto fail;
	}
	free(text);
	text = NULL;
	/* The spec is read by sbx-launch from fd 3; bwrap reports on fd 4;
	 * each further fd is named on the command line by its number. */
	static const char *const numbers[] = { "3", "4", "5", "6", "7" };
	const char *argv[12] = { launch, "--info-fd", "4" };
	size_t argc = 3, slot = 2;
	fds[0] = memfd;
	fds[1] = info[1];
	if (channel_fd >= 0) {
		argv[argc++] = "--channel-fd";
		argv[argc++] = numbers[slot];
		fds[slot++] = channel_fd;
	}
	argv[argc++] = "--plan-fd";
	argv[argc++] = numbers[slot];
	fds[slot++] = plan[1];
	if (denials_fd >= 0) {
		argv[argc++] = "--denials-fd";
		argv[argc++] = numbers[slot];
		fds[slot++] = denials_fd;
	}
	argv[argc++] = "/proc/self/fd/3";
	argv[argc] = NULL;
	struct sbx_spawn s = { .argv = argv, .stdin_fd = in[0], .stdout_fd = out[1], .stderr_fd = err[1],
			       .extra_fds = fds, .n_extra = base + n_dirs };
	sb->pid = sbx_spawn_release(holder, &s, NULL, e);
	if (sb->pid < 0)
		goto fail;
	close(memfd);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	close(info[1]);
	close(plan[1]);
	sb->plan = plan[0];
	sb->in = in[1];
	sb->out = out[0];
	sb->err = err[0];
	sb->info = info[0];
	sb->pidfd = (int)syscall(SYS_pidfd_open, sb->pid, 0);
	fcntl(sb->in, F_SETFL, O_NONBLOCK);
	fcntl(sb->out, F_SETFL, O_NONBLOCK);
	fcntl(sb->err, F_SETFL, O_NONBLOCK);
	fcntl(sb->info, F_SETFL, O_NONBLOCK);
	return 0;
fail:
	free(text);
	if (memfd >= 0)
		close(memfd);
	close_pair(in);
	close_pair(out);
	close_pair(err);
	close_pair(info);
	close_pair(plan);
	return -1;
}

/* A number after `"key":` in bwrap's info JSON. */
static unsigned long long info_number(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	if (!p || !(p = strchr(p + strlen(key), ':')))
		return 0;
	return strtoull(p + 1, NULL, 10);
}

bool sbx_sandbox_read_info(struct sbx_sandbox *sb)
{
	while (sb->info >= 0 && sb->info_len < sizeof(sb->info_buf) - 1) {
		ssize_t n = read(sb->info, sb->info_buf + sb->info_len, sizeof(sb->info_buf) - 1 - sb->info_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				close(sb->info);
				sb->info = -1;
			}
			break;
		}
		sb->info_len += (size_t)n;
	}
	sb->info_buf[sb->info_len] = '\0';
	if (!sb->init_pid && strchr(sb->info_buf, '}')) {
		sb->init_pid = (pid_t)info_number(sb->info_buf, "\"child-pid\"");
		sb->pidns = info_number(sb->info_buf, "\"pid-namespace\"");
		if (sb->init_pid > 0)
			sb->init_pidfd = (int)syscall(SYS_pidfd_open, sb->init_pid, 0);
	}
	return sb->init_pid > 0;
}

bool sbx_sandbox_exit_reported(struct sbx_sandbox *sb)
{
	sbx_sandbox_read_info(sb);
	return strstr(sb->info_buf, "\"exit-code\"") != NULL;
}

/* The parent of pid from /proc/<pid>/stat (world-readable, so no ptrace
 * right is needed); 0 when it cannot be read. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the name may hold spaces and parens */
	int ppid = 0;
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

int sbx_sandbox_signal_all(const struct sbx_sandbox *sb, int sig)
{
	/* Every process of the sandbox descends from its pid 1: orphans are
	 * re-parented to it, so no double fork leaves the tree. */
	enum { MAX_PROCS = 65536 };
	static pid_t pids[MAX_PROCS], parents[MAX_PROCS];
	static unsigned char in_tree[MAX_PROCS];
	size_t n = 0;
	int count = 0;

	if (sb->init_pid <= 0)
		return 0;
	DIR *d = opendir("/proc");
	for (struct dirent *de; d && (de = readdir(d)) && n < MAX_PROCS;) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		pids[n] = (pid_t)pid;
		parents[n] = parent_of((pid_t)pid);
		in_tree[n] = 0;
		n++;
	}
	if (d)
		closedir(d);
	/* Grow the tree until no process joins it (depth-independent). */
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (in_tree[i])
				continue;
			bool child = parents[i] == sb->init_pid;
			for (size_t j = 0; !child && j < n; j++)
				child = in_tree[j] && parents[i] == pids[j];
			if (child) {
				in_tree[i] = 1;
				grew = true;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		if (in_tree[i] && kill(pids[i], sig) == 0)
			count++;
	return count;
}

/* bwrap's own children, killed through pidfds: its sandbox pid 1 before
 * the info fd has named it (killed mid-setup, that child would otherwise
 * wait forever for a parent that is gone). */
static void kill_children(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	for (char *p = buf, *end; *p; p = end) {
		long child = strtol(p, &end, 10);
		if (end == p)
			break;
		int fd = child > 0 ? (int)syscall(SYS_pidfd_open, (pid_t)child, 0) : -1;
		if (fd >= 0) {
			syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
			close(fd);
		}
	}
}

void sbx_sandbox_kill(const struct sbx_sandbox *sb)
{
	if (sb->init_pidfd < 0 && sb->pid > 0)
		kill_children(sb->pid);
	if (sb->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
	if (sb->init_pidfd >= 0)
		syscall(SYS_pidfd_send_signal, sb->init_pidfd, SIGKILL, NULL, 0);
}

int sbx_sandbox_reap(struct sbx_sandbox *sb)
{
	int status = 0;
	if (sb->pid > 0)
		while (waitpid(sb->pid, &status, 0) < 0 && errno == EINTR)
			;
	sb->pid = -1;
	/* pid 1's exit completes only after every process of its namespace is
	 * gone, so this is "the whole tree is gone". */
	if (sb->init_pidfd >= 0) {
		struct pollfd p = { .fd = sb->init_pidfd, .events = POLLIN };
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
	}
	return status;
}

json_t *sbx_sandbox_plan(struct sbx_sandbox *sb)
{
	struct sbx_error e;
	size_t len;
	if (sb->plan < 0)
		return NULL;
	/* Blocks until sbx-launch wrote it and closed, or exited: at most as
	 * long as the launch's own checks. */
	char *text = sbx_read_fd_capped(sb->plan, 1u << 20, &len, "sbx-launch plan", &e);
	close(sb->plan);
	sb->plan = -1;
	json_t *plan = text && len ? json_loadb(text, len, 0, NULL) : NULL;
	free(text);
	return plan;
}

void sbx_sandbox_close(struct sbx_sandbox *sb)
{
	int *fds[] = { &sb->pidfd, &sb->init_pidfd, &sb->in, &sb->out, &sb->err, &sb->info, &sb->plan };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}
