/* cgroup_limits.c — finding where this host lets a run's limits live (a
 * delegated cgroup v2 subtree, or the cgroup v1 hierarchies), creating
 * sbx-<id> there with the memory, pids and CPU limits, and removing it. */
#include "cgroup_limits.h"
#include "exitcodes.h"
#include "io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const controller[SBX_CG_DIRS] = { "memory", "pids", "cpu" };

/* Whether a comma- or space-separated list holds word. */
static bool lists_word(const char *list, const char *word, const char *separators)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || strchr(separators, p[-1])) && (!p[n] || strchr(separators, p[n]) || p[n] == '\n'))
			return true;
	return false;
}

static bool file_lists_word(const char *path, const char *word)
{
	struct sbx_error ignored;
	size_t len;
	char *text = sbx_read_file_capped(path, 4096, &len, &ignored);
	bool found = text && lists_word(text, word, " ");
	free(text);
	return found;
}

/* This process's cgroup for a hierarchy: v2 (want NULL) is "0::<path>",
 * v1 is "N:<controllers>:<path>" with want among the controllers. */
static bool own_path(const char *want, char *out, size_t size)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen("/proc/self/cgroup", "re");
	while (f && !found && fgets(line, sizeof(line), f)) {
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
		if (!b)
			continue;
		*a = *b = '\0';
		bool match = want ? strcmp(line, "0") != 0 && lists_word(a + 1, want, ",") : !strcmp(line, "0") && !a[1];
		if (match && snprintf(out, size, "%.*s", (int)strcspn(b + 1, "\n"), b + 1) < (int)size)
			found = true;
	}
	if (f)
		fclose(f);
	return found;
}

/* The mount point of cgroup2 (want NULL) or of the v1 hierarchy holding want. */
static bool mount_of(const char *want, char *out, size_t size)
{
	char line[8192];
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	while (f && !found && fgets(line, sizeof(line), f)) {
		char mp[PATH_MAX], type[64], source[256], options[2048];
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 ||
		    sscanf(dash + 3, "%63s %255s %2047s", type, source, options) != 3)
			continue;
		if (want ? !strcmp(type, "cgroup") && lists_word(options, want, ",") : !strcmp(type, "cgroup2"))
			found = snprintf(out, size, "%s", mp) < (int)size;
	}
	if (f)
		fclose(f);
	return found;
}

static bool join(char *out, size_t size, const char *a, const char *b)
{
	return snprintf(out, size, "%s%s", a, strcmp(b, "/") ? b : "") < (int)size;
}

static int write_file(const char *dir, const char *name, const char *value, struct sbx_error *e)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	int ok = fd >= 0 && sbx_write_all(fd, value, strlen(value)) == 0;
	int err = errno;
	if (fd >= 0 && close(fd) != 0)
		ok = 0;
	if (!ok && e)
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "limits-unavailable", "limits: cannot write %s: %s", path, strerror(err));
	return ok ? 0 : -1;
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static bool wanted(const struct sbx_run_limits *l, int i)
{
	return i == SBX_CG_MEMORY ? l->memory_bytes > 0 : i == SBX_CG_PIDS ? l->pids > 0 : l->cpu_percent > 0;
}

/* The v2 directory to create in, when every wanted controller is enabled there. */
static bool v2_root(const struct sbx_run_limits *l, char *root, size_t size)
{
	char mount[PATH_MAX], rel[PATH_MAX], file[PATH_MAX + 32];
	const char *env = getenv("SBX_CGROUP_ROOT");
	if (env && *env)
		snprintf(root, size, "%s", env);
	else if (!mount_of(NULL, mount, sizeof(mount)) || !own_path(NULL, rel, sizeof(rel)) || !join(root, size, mount, rel))
		return false;
	snprintf(file, sizeof(file), "%s/cgroup.subtree_control", root);
	for (int i = 0; i < SBX_CG_DIRS; i++)
		if (wanted(l, i) && !file_lists_word(file, controller[i]))
			return false;
	return access(root, W_OK) == 0;
}

/* v1: the runner's own directory "sbx" (made when missing: a hierarchy's
 * root is mode 0555), where a run's cgroup can be created and removed. */
static bool v1_own_dir(const char *dir)
{
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return false;
	struct stat st;
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && access(dir, W_OK) == 0;
}

/* v1: each wanted controller's hierarchy, at this process's place in it,
 * below "sbx". */
static bool v1_roots(const struct sbx_run_limits *l, char roots[SBX_CG_DIRS][PATH_MAX])
{
	for (int i = 0; i < SBX_CG_DIRS; i++) {
		char mount[PATH_MAX], rel[PATH_MAX], parent[PATH_MAX];
		roots[i][0] = '\0';
		if (!wanted(l, i))
			continue;
		if (!mount_of(controller[i], mount, sizeof(mount)) || !own_path(controller[i], rel, sizeof(rel)) ||
		    !join(parent, sizeof(parent), mount, rel) || snprintf(roots[i], PATH_MAX, "%s/sbx", parent) >= PATH_MAX ||
		    !v1_own_dir(roots[i]))
			return false;
	}
	return true;
}

static int set_limits(struct sbx_cgroup *cg, const struct sbx_run_limits *l, struct sbx_error *e)
{
	char value[64];
	bool v2 = cg->mode == SBX_CGROUP_V2;
	const char *mem = cg->dir[v2 ? 0 : SBX_CG_MEMORY], *pids = cg->dir[v2 ? 0 : SBX_CG_PIDS],
		   *cpu = cg->dir[v2 ? 0 : SBX_CG_CPU];
	if (l->memory_bytes > 0) {
		snprintf(value, sizeof(value), "%lld\n", l->memory_bytes);
		/* No swap beyond it: v2 memory.swap.max 0; v1 memsw (when swap is
		 * accounted) equal to the memory limit, set after it. */
		if (write_file(mem, v2 ? "memory.max" : "memory.limit_in_bytes", value, e) != 0)
			return -1;
		if (v2 ? write_file(mem, "memory.swap.max", "0\n", e) != 0
		       : exists(mem, "memory.memsw.limit_in_bytes") && write_file(mem, "memory.memsw.limit_in_bytes", value, e) != 0)
			return -1;
	}
	if (l->pids > 0) {
		snprintf(value, sizeof(value), "%lld\n", l->pids);
		if (write_file(pids, "pids.max", value, e) != 0)
			return -1;
	}
	if (l->cpu_percent > 0) {
		/* cpuPercent of one CPU per 100 ms period. */
		snprintf(value, sizeof(value), v2 ? "%lld 100000\n" : "%lld\n", l->cpu_percent * 1000);
		if ((!v2 && write_file(cpu, "cpu.cfs_period_us", "100000\n", e) != 0) ||
		    write_file(cpu, v2 ? "cpu.max" : "cpu.cfs_quota_us", value, e) != 0)
			return -1;
	}
	return 0;
}

/* sbx-<pid>-<id>: ids repeat across state dirs, pids do not among the
 * living. A dead supervisor's (killed before it removed them) go first. */
static void sweep_dead(const char *root)
{
	DIR *d = opendir(root);
	struct dirent *de;
	for (int n = 0; d && n < 4096 && (de = readdir(d)); n++) {
		char *end;
		long pid = strncmp(de->d_name, "sbx-", 4) ? 0 : strtol(de->d_name + 4, &end, 10);
		if (pid <= 0 || *end != '-' || (kill((pid_t)pid, 0) != 0 && errno != ESRCH) || kill((pid_t)pid, 0) == 0)
			continue;
		unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR); /* only an empty cgroup goes */
	}
	if (d)
		closedir(d);
}

static int unavailable(const struct sbx_run_limits *l, struct sbx_cgroup *cg, struct sbx_error *e)
{
	cg->mode = SBX_CGROUP_NONE;
	if (!l->requested)
		return 0; /* defaults: rlimits stand in (sbx-launch/exec.c) */
	sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "limits-unavailable",
		      "limits: this host has neither a writable cgroup v2 subtree with the controllers these limits "
		      "need nor writable cgroup v1 hierarchies for them");
	sbx_error_remedy(e, "Delegate a cgroup v2 subtree to the runner (systemd: Delegate=yes) and point "
			    "SBX_CGROUP_ROOT at it, run sbx-run as root on a cgroup v1 host, or omit limits.");
	return -1;
}

enum sbx_cgroup_mode sbx_cgroup_probe(const struct sbx_run_limits *l)
{
	char roots[SBX_CG_DIRS][PATH_MAX];
	if (!wanted(l, SBX_CG_MEMORY) && !wanted(l, SBX_CG_PIDS) && !wanted(l, SBX_CG_CPU))
		return SBX_CGROUP_NONE;
	return v2_root(l, roots[0], sizeof(roots[0])) ? SBX_CGROUP_V2 : v1_roots(l, roots) ? SBX_CGROUP_V1 : SBX_CGROUP_NONE;
}

const char *sbx_cgroup_mode_name(enum sbx_cgroup_mode mode)
{
	static const char *const names[] = { "rlimit", "cgroup-v2", "cgroup-v1" };
	return names[mode];
}

int sbx_cgroup_create(const char *id, const struct sbx_run_limits *l, struct sbx_cgroup *cg, struct sbx_error *e)
{
	char roots[SBX_CG_DIRS][PATH_MAX];
	memset(cg, 0, sizeof(*cg));
	for (int i = 0; i < SBX_CG_DIRS; i++)
		cg->procs_fd[i] = -1;
	if (!wanted(l, SBX_CG_MEMORY) && !wanted(l, SBX_CG_PIDS) && !wanted(l, SBX_CG_CPU))
		return 0;
	if (v2_root(l, roots[0], sizeof(roots[0])))
		cg->mode = SBX_CGROUP_V2;
	else if (v1_roots(l, roots))
		cg->mode = SBX_CGROUP_V1;
	else
		return unavailable(l, cg, e);
	for (int i = 0; i < SBX_CG_DIRS; i++) {
		bool here = cg->mode == SBX_CGROUP_V2 ? i == 0 : wanted(l, i);
		if (!here)
			continue;
		sweep_dead(roots[i]);
		bool fits = snprintf(cg->dir[i], PATH_MAX, "%s/sbx-%ld-%s", roots[i], (long)getpid(), id) < PATH_MAX;
		bool made = fits && mkdir(cg->dir[i], 0755) == 0;
		/* v1: another run may have just removed an empty "sbx" (see
		 * sbx_cgroup_remove): made again, a bounded number of times. */
		for (int tries = 0; fits && !made && errno == ENOENT && cg->mode == SBX_CGROUP_V1 && tries < 8; tries++)
			made = v1_own_dir(roots[i]) && mkdir(cg->dir[i], 0755) == 0;
		if (!made) {
			sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "limits-unavailable", "limits: cannot create %s: %s",
				      cg->dir[i], strerror(errno));
			cg->dir[i][0] = '\0';
			goto fail;
		}
		char file[PATH_MAX + 32];
		snprintf(file, sizeof(file), "%s/cgroup.procs", cg->dir[i]);
		if ((cg->procs_fd[i] = open(file, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0) {
			sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "limits-unavailable", "limits: %s: %s", file, strerror(errno));
			goto fail;
		}
	}
	if (set_limits(cg, l, e) != 0)
		goto fail;
	return 0;
fail:
	sbx_cgroup_remove(cg);
	return -1;
}

int sbx_cgroup_adopt(struct sbx_cgroup *cg, const struct sbx_run_limits *l, struct sbx_error *e)
{
	if (sbx_cgroup_probe(l) != cg->mode)
		return 0;
	if (cg->mode == SBX_CGROUP_NONE)
		return l->requested && (l->memory_bytes > 0 || l->pids > 0 || l->cpu_percent > 0) ? 0 : 1;
	/* v1: exactly the hierarchies l wants, so no default stays in one it does not. */
	for (int i = 0; cg->mode == SBX_CGROUP_V1 && i < SBX_CG_DIRS; i++)
		if (wanted(l, i) != (cg->dir[i][0] != '\0'))
			return 0;
	return set_limits(cg, l, e) == 0 ? 1 : -1;
}

/* v1 has no cgroup.kill: each member gets SIGKILL, a bounded number of
 * rounds (a fork racing the read lands in the next one). */
static void kill_members(const char *dir)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	for (int round = 0; round < 16; round++) {
		struct sbx_error ignored;
		size_t len;
		char *text = sbx_read_file_capped(path, 1 << 20, &len, &ignored);
		bool any = false;
		for (char *p = text, *end; p && *p; p = end) {
			long pid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (pid > 1 && kill((pid_t)pid, SIGKILL) == 0)
				any = true;
		}
		free(text);
		if (!any)
			return;
	}
}

void sbx_cgroup_kill(const struct sbx_cgroup *cg)
{
	if (cg->mode == SBX_CGROUP_V2)
		write_file(cg->dir[0], "cgroup.kill", "1\n", NULL);
	else
		for (int i = 0; i < SBX_CG_DIRS; i++)
			if (cg->dir[i][0])
				kill_members(cg->dir[i]);
}

/* The counter key ("oom_kill", "max") of a controller's events file, 0
 * when absent: v2 memory.events and pids.events, v1 memory.oom_control
 * and pids.events. */
static long long event_count(const struct sbx_cgroup *cg, int controller, const char *v1_file, const char *v2_file,
			     const char *key)
{
	const char *dir = cg->dir[cg->mode == SBX_CGROUP_V2 ? 0 : controller];
	char path[PATH_MAX + 32], needle[32];
	if (!dir[0])
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, cg->mode == SBX_CGROUP_V2 ? v2_file : v1_file);
	struct sbx_error ignored;
	size_t len;
	char *text = sbx_read_file_capped(path, 4096, &len, &ignored);
	int n = snprintf(needle, sizeof(needle), "%s ", key);
	long long count = 0;
	for (char *at = text; at && (at = strstr(at, needle)); at += n)
		if (at == text || at[-1] == '\n') {
			count = strtoll(at + n, NULL, 10);
			break;
		}
	free(text);
	return count > 0 ? count : 0;
}

void sbx_cgroup_remove(struct sbx_cgroup *cg)
{
	/* Read once, while the directories are there (a second call finds none). */
	if (cg->mode != SBX_CGROUP_NONE && (cg->dir[0][0] || cg->dir[SBX_CG_PIDS][0])) {
		cg->oom_kills = event_count(cg, SBX_CG_MEMORY, "memory.oom_control", "memory.events", "oom_kill");
		cg->oom_killed = cg->oom_kills > 0;
		cg->pids_refused = event_count(cg, SBX_CG_PIDS, "pids.events", "pids.events", "max");
	}
	for (int i = 0; i < SBX_CG_DIRS; i++) {
		if (cg->procs_fd[i] >= 0)
			close(cg->procs_fd[i]);
		cg->procs_fd[i] = -1;
		/* Empty of processes by now, a kernel cgroup goes with rmdir. On v1
		 * "sbx" goes too once no other run's cgroup is in it (else EBUSY):
		 * the cgroup it lies in may be a Slurm job's, which Slurm removes
		 * when the job ends, and can only if it is empty. */
		char *slash = cg->dir[i][0] && rmdir(cg->dir[i]) == 0 ? strrchr(cg->dir[i], '/') : NULL;
		if (slash && cg->mode == SBX_CGROUP_V1) {
			*slash = '\0';
			rmdir(cg->dir[i]);
		}
		cg->dir[i][0] = '\0';
	}
}

json_t *sbx_cgroup_report(const struct sbx_cgroup *cg, const struct sbx_run_limits *l)
{
	bool any = l->memory_bytes > 0 || l->pids > 0 || l->cpu_percent > 0;
	json_t *out = json_pack("{s:s,s:I,s:I,s:I}", "mode", any ? sbx_cgroup_mode_name(cg->mode) : "none", "memoryBytes",
				(json_int_t)l->memory_bytes, "pids", (json_int_t)l->pids, "cpuPercent",
				(json_int_t)l->cpu_percent);
	if (cg->mode == SBX_CGROUP_NONE && any)
		json_object_set_new(out, "note", json_string("no writable cgroup here: memory is RLIMIT_AS, processes "
							     "RLIMIT_NPROC of the workload's uid, CPU not limited"));
	if (cg->mode != SBX_CGROUP_NONE)
		json_object_set_new(out, "oomKilled", json_boolean(cg->oom_killed));
	return out;
}
