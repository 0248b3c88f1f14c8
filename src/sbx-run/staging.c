/* staging.c — the state directory, made and absolute; and a standby's
 * execution directory, made while it waits: <state>/.standby-<pid>/ with
 * supervisor.json, stdout.txt, stderr.txt and
 * scratch/{checkpoints,media,outputs}, renamed (never replacing) to the
 * execution's name when the request comes. Creating files is the costly
 * part of a run's preparation (~0.3 ms each on a busy ext4 here). */
#include "run.h"
#include "../lib/atomic_file.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"
#include "../lib/json.h"
#include "../lib/tree_remove.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STAGE_PREFIX ".standby-"

/* The state directory, made and absolute from here on (paths under it are
 * bound into sandboxes); 0711: the workload's uid must reach its scratch
 * below, and it lists nothing. */
void run_settle_state_dir(struct run *r)
{
	struct sbx_error e;
	if (sbx_mkdir_p(r->state_dir, 0711, &e) != 0)
		sbx_die(&e);
	char *abs_state = realpath(r->state_dir, NULL);
	if (!abs_state || strlen(abs_state) >= sizeof(r->state_dir) - 64) {
		sbx_error_set(&e, SBX_EXIT_USAGE, "bad-path", "--state-dir: %s: cannot resolve", r->state_dir);
		sbx_die(&e);
	}
	memcpy(r->state_dir, abs_state, strlen(abs_state) + 1);
	free(abs_state);
}

/* Staging directories of standbys that died waiting. */
static void sweep_dead(const char *state_dir)
{
	DIR *d = opendir(state_dir);
	if (!d)
		return;
	for (struct dirent *de; (de = readdir(d));) {
		if (strncmp(de->d_name, STAGE_PREFIX, strlen(STAGE_PREFIX)) != 0)
			continue;
		char *end;
		long pid = strtol(de->d_name + strlen(STAGE_PREFIX), &end, 10);
		if (*end || pid <= 0 || pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		sbx_remove_tree_at(dirfd(d), de->d_name);
	}
	closedir(d);
}

static bool make_file(const char *dir, const char *name)
{
	char path[PATH_MAX + 256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

void run_stage(struct run *r)
{
	static const char *const dirs[] = { "scratch", "scratch/checkpoints", "scratch/media", "scratch/outputs" };
	char path[PATH_MAX + 256];
	sweep_dead(r->state_dir);
	snprintf(r->staged, sizeof(r->staged), "%s/" STAGE_PREFIX "%d", r->state_dir, (int)getpid());
	bool ok = mkdir(r->staged, 0700) == 0;
	for (size_t i = 0; ok && i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", r->staged, dirs[i]);
		ok = mkdir(path, 0700) == 0;
	}
	ok = ok && make_file(r->staged, "stdout.txt") && make_file(r->staged, "stderr.txt");
	if (ok) {
		snprintf(r->exec_dir, sizeof(r->exec_dir), "%s", r->staged);
		run_record_supervisor(r);
		r->exec_dir[0] = '\0';
		return;
	}
	run_unstage(r); /* the request then makes its directory itself */
}

int run_take_stage(struct run *r, struct sbx_error *e)
{
	if (renameat2(AT_FDCWD, r->staged, AT_FDCWD, r->exec_dir, RENAME_NOREPLACE) == 0) {
		r->staged[0] = '\0';
		return 1;
	}
	int err = errno;
	run_unstage(r);
	if (err == EEXIST) {
		sbx_error_set(e, SBX_EXIT_USAGE, "duplicate-execution", "executionId: %s: already used", r->exec_dir);
		return -1;
	}
	return 0; /* made anew by the caller */
}

void run_unstage(struct run *r)
{
	if (r->staged[0])
		sbx_remove_tree(r->staged);
	r->staged[0] = '\0';
}

void run_record_supervisor(struct run *r)
{
	struct sbx_error e;
	char path[PATH_MAX + 256], start[32];
	sbx_process_start_time(getpid(), start, sizeof(start));
	char *text = NULL;
	if (asprintf(&text, "{\"pid\":%d,\"startTime\":\"%s\"}\n", (int)getpid(), start) > 0) {
		snprintf(path, sizeof(path), "%s/supervisor.json", r->exec_dir);
		sbx_atomic_replace(path, text, strlen(text), 0600, false, &e); /* no process outlives a power cut */
	}
	free(text);
}

/* The launch spec, kept beside the result (the environment and working
 * directory the sandbox got come from sbx-launch's plan at start); not
 * under --transient, whose caller removes the directory unread (a file
 * created costs ~0.3 ms of CPU on a busy ext4 here). */
int run_record_spec(struct run *r, struct sbx_error *e)
{
	if (r->transient)
		return 0;
	char *text = json_dumps(r->req.spec, JSON_COMPACT);
	char path[PATH_MAX + 256];
	snprintf(path, sizeof(path), "%s/launch-spec.json", r->exec_dir);
	int rc = text ? sbx_atomic_replace(path, text, strlen(text), 0600, false, e) : -1; /* a record, never read back */
	free(text);
	return rc;
}
