/* cgroup_limits.c — finding the delegated cgroup v2 directory, creating a
 * child with memory.max / pids.max / cpu.max, and removing it. */
#include "cgroup_limits.h"
#include "exitcodes.h"
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* This process's cgroup v2 directory: the cgroup2 mount + "0::<path>". */
static int own_cgroup(char *out, size_t size)
{
	char line[4096], mount[PATH_MAX] = "", rel[PATH_MAX] = "";
	FILE *f = fopen("/proc/self/cgroup", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3))
			snprintf(rel, sizeof(rel), "%.*s", (int)strcspn(line + 3, "\n"), line + 3);
	if (f)
		fclose(f);
	f = fopen("/proc/self/mountinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *dash = strstr(line, " - cgroup2 ");
		if (!dash)
			continue;
		char mp[PATH_MAX];
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) == 1 && !mount[0])
			snprintf(mount, sizeof(mount), "%s", mp);
	}
	if (f)
		fclose(f);
	if (!mount[0] || !rel[0])
		return -1;
	return snprintf(out, size, "%s%s", mount, strcmp(rel, "/") ? rel : "") < (int)size ? 0 : -1;
}

static bool lists_word(const char *path, const char *word)
{
	struct sbx_error ignored;
	size_t len, n = strlen(word);
	char *text = sbx_read_file_capped(path, 4096, &len, &ignored);
	bool found = false;
	for (char *p = text; p && (p = strstr(p, word)); p += n)
		if ((p == text || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			found = true;
	free(text);
	return found;
}

static int write_file(const char *dir, const char *name, const char *value, struct sbx_error *e)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	int ok = fd >= 0 && sbx_write_all(fd, value, strlen(value)) == 0;
	int err = errno;
	if (fd >= 0 && close(fd) != 0)
		ok = 0;
	if (!ok)
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "limits-unavailable", "limits: cannot write %s: %s", path, strerror(err));
	return ok ? 0 : -1;
}

int sbx_cgroup_create(const char *id, const struct sbx_run_limits *l, struct sbx_cgroup *cg, struct sbx_error *e)
{
	char root[PATH_MAX], file[PATH_MAX + 32];
	const char *env = getenv("SBX_CGROUP_ROOT");
	const char *needed[3] = { l->memory_bytes ? "memory" : NULL, l->pids ? "pids" : NULL,
				  l->cpu_percent ? "cpu" : NULL };

	memset(cg, 0, sizeof(*cg));
	cg->procs_fd = -1;
	if (env && *env)
		snprintf(root, sizeof(root), "%s", env);
	else if (own_cgroup(root, sizeof(root)) != 0)
		root[0] = '\0';
	snprintf(file, sizeof(file), "%s/cgroup.subtree_control", root);
	for (int i = 0; i < 3; i++) {
		if (!needed[i])
			continue;
		if (!root[0] || !lists_word(file, needed[i])) {
			sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "limits-unavailable",
				      "limits: this host does not delegate a writable cgroup v2 subtree with the %s "
				      "controller enabled%s%s", needed[i], root[0] ? " in " : "", root);
			sbx_error_remedy(e, "Delegate a cgroup v2 subtree to the runner (systemd: Delegate=yes) and "
					    "point SBX_CGROUP_ROOT at it, or omit limits.");
			return -1;
		}
	}
	if (snprintf(cg->path, sizeof(cg->path), "%s/sbx-%s", root, id) >= (int)sizeof(cg->path) ||
	    mkdir(cg->path, 0755) != 0) {
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "limits-unavailable", "limits: cannot create %s: %s", cg->path,
			      strerror(errno));
		return -1;
	}
	cg->active = true;
	char value[64];
	if (l->memory_bytes) {
		snprintf(value, sizeof(value), "%lld\n", l->memory_bytes);
		if (write_file(cg->path, "memory.max", value, e) != 0 || write_file(cg->path, "memory.swap.max", "0\n", e) != 0)
			goto fail;
	}
	if (l->pids) {
		snprintf(value, sizeof(value), "%lld\n", l->pids);
		if (write_file(cg->path, "pids.max", value, e) != 0)
			goto fail;
	}
	if (l->cpu_percent) {
		/* cpuPercent of one CPU per 100 ms period. */
		snprintf(value, sizeof(value), "%lld 100000\n", l->cpu_percent * 1000);
		if (write_file(cg->path, "cpu.max", value, e) != 0)
			goto fail;
	}
	snprintf(file, sizeof(file), "%s/cgroup.procs", cg->path);
	if ((cg->procs_fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0) {
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "limits-unavailable", "limits: %s: %s", file, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	sbx_cgroup_remove(cg);
	return -1;
}

void sbx_cgroup_kill(const struct sbx_cgroup *cg)
{
	struct sbx_error ignored;
	if (cg->active)
		write_file(cg->path, "cgroup.kill", "1\n", &ignored);
}

void sbx_cgroup_remove(struct sbx_cgroup *cg)
{
	if (cg->procs_fd >= 0)
		close(cg->procs_fd);
	cg->procs_fd = -1;
	/* Empty of processes by now, a kernel cgroup goes with rmdir. */
	if (cg->active)
		rmdir(cg->path);
	cg->active = false;
}

json_t *sbx_cgroup_report(const struct sbx_cgroup *cg, const struct sbx_run_limits *l)
{
	if (!l->requested)
		return json_pack("{s:s}", "mode", "none");
	return json_pack("{s:s,s:s,s:I,s:I,s:I}", "mode", "cgroup-v2", "cgroup", cg->path,
			 "memoryBytes", (json_int_t)l->memory_bytes, "pids", (json_int_t)l->pids,
			 "cpuPercent", (json_int_t)l->cpu_percent);
}
