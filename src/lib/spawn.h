/* spawn.h — starting a program safely: no shell, an explicit argv, stdin/
 * stdout/stderr wired as asked, chosen fds at 3.., every other fd closed. */
#ifndef SBX_SPAWN_H
#define SBX_SPAWN_H

#include "error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sbx_spawn {
	const char *const *argv; /* argv[0] is the executable's path (no PATH search) */
	char *const *envp;       /* NULL: inherit this process's environment */
	int stdin_fd;            /* -1: /dev/null */
	int stdout_fd;           /* -1: /dev/null */
	int stderr_fd;           /* -1: /dev/null */
	const int *extra_fds;    /* become fds 3, 4, ... in the child, in order */
	size_t n_extra;
	bool new_process_group;  /* setpgid(0, 0) so the group can be killed */
	bool new_session;        /* setsid(): away from the caller's terminal */
	bool die_with_parent;    /* PR_SET_PDEATHSIG SIGKILL */
	bool helper;             /* a root helper: sys_admin and dac_override leave its bounding set */
	const int *cgroup_procs_fds; /* n_cgroup_procs fds; each > 0 gets the child's pid first */
	size_t n_cgroup_procs;
	const char *cwd;         /* NULL: this process's; a failed chdir fails the start */
	bool switch_ids;         /* as root: drop to uid/gid, no supplementary groups, before the chdir and exec */
	uid_t uid;
	gid_t gid;
};

/* Starts the program. Returns its pid, or -1 with an error when it could
 * not be executed (exec's errno is in *exec_errno when not NULL). */
pid_t sbx_spawn_start(const struct sbx_spawn *s, int *exec_errno, struct sbx_error *e);

/* In a child: its session or group, parent-death signal and cgroups as s
 * says; 0 or the errno of a failed join. */
int sbx_spawn_child_setup(const struct sbx_spawn *s);
/* The child's half of a start: wires fds as s says and execs; on failure
 * writes errno to report_fd and exits 127. */
_Noreturn void sbx_spawn_child_exec(const struct sbx_spawn *s, int devnull, int report_fd);

struct sbx_capture {
	char *out, *err;        /* NUL-terminated, at most cap bytes each */
	size_t out_len, err_len;
	bool out_truncated, err_truncated;
	bool timed_out;         /* killed (with its process group) at the deadline */
	int status;             /* wait status, valid when the program ran */
	int exec_errno;         /* nonzero when the program could not be executed */
};

/* Runs the program to completion with stdout and stderr captured (each
 * capped at cap bytes; the rest is read and discarded) and a deadline of
 * timeout_ms (0 = none). Returns 0 when it ran (whatever its exit), -1
 * when it could not start (c->exec_errno, e set; nothing to free). After a
 * 0, free the buffers with sbx_capture_free. */
int sbx_spawn_capture(const struct sbx_spawn *s, int timeout_ms, size_t cap,
		      struct sbx_capture *c, struct sbx_error *e);
void sbx_capture_free(struct sbx_capture *c);

/* The last non-empty line of text, trimmed, copied into out. */
void sbx_last_line(const char *text, char *out, size_t size);

#endif
