/* sweep.c — `sbx-run sweep STATE-DIR`: execution directories older than
 * --older-than seconds go, unless their sbx-run still lives or they hold a
 * pending change (a speculative run's) that has not expired; an expired
 * one is collected first. At most --max of them per call, so one call
 * stays short whatever piled up. */
#include "run.h"
#include "../lib/cli.h"
#include "../lib/clock.h"
#include "../lib/diag.h"
#include "../lib/exitcodes.h"
#include "../lib/json.h"
#include "../lib/tree_remove.h"
#include "pending.h"
#include "supervisor_record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An executionId (no leading dot: standby staging is not a run), and not
 * the state dir's own locks/ and snapshots/. */
static bool run_dir_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 160 || name[0] == '.' || !strcmp(name, "locks") || !strcmp(name, "snapshots"))
		return false;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:.-") == n;
}

/* The directory's pending change, if any: 1 while it waits (the
 * directory stays), 0 otherwise; an expired one is collected here
 * (*expired set). A change a commit or discard holds waits too. */
static int pending_keeps(const char *state, const char *name, long long now_ms, bool *expired)
{
	char path[PATH_MAX + 200];
	struct sbx_error e;
	*expired = false;
	if (snprintf(path, sizeof(path), "%s/%s", state, name) >= (int)sizeof(path))
		return 0;
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return 0;
	bool has = faccessat(dir, PENDING_FILE, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	close(dir);
	if (!has)
		return 0;
	if ((dir = pending_lock(path, false, &e)) < 0)
		return 1; /* being committed or discarded right now */
	json_t *doc = pending_read(dir, &e);
	int keep = 0;
	if (doc && pending_expired(doc, now_ms))
		*expired = pending_close(dir, doc, "expired", &e) == 0;
	else if (doc && !strcmp(json_string_value(json_object_get(doc, "state")), "pending"))
		keep = 1;
	json_decref(doc);
	close(dir);
	return keep;
}

int run_sweep_command(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "older-than", required_argument, NULL, 'o' }, { "max", required_argument, NULL, 'm' },
		{ "pending-only", no_argument, NULL, 'p' }, { "now-s", required_argument, NULL, 'n' }, { 0 },
	};
	long long older_than = 0, max = 64, now = sbx_wall_ms() / 1000;
	bool pending_only = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'o': older_than = sbx_cli_parse_long("--older-than", optarg, 0, 86400LL * 365 * 10); break;
		case 'm': max = sbx_cli_parse_long("--max", optarg, 1, 1000000); break;
		case 'p': pending_only = true; break;
		case 'n': now = sbx_cli_parse_long("--now-s", optarg, 0, 86400LL * 365 * 1000); break;
		default: sbx_cli_bad_option("sbx-run", argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		sbx_cli_usage_error("sbx-run", "sweep takes one STATE-DIR");
	const char *state = argv[optind];
	int dir = open(state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dir >= 0 ? fdopendir(dir) : NULL;
	if (!d) {
		struct sbx_error e;
		if (dir >= 0)
			close(dir);
		if (errno == ENOENT) { /* nothing ran here yet */
			return sbx_json_answer(json_pack("{s:i,s:i,s:i,s:i,s:i}", "removed", 0, "kept", 0, "failed", 0,
							 "pendingExpired", 0, "pendingWaiting", 0));
		}
		sbx_error_set(&e, SBX_EXIT_USAGE, "bad-path", "%s: %s", state, strerror(errno));
		sbx_die(&e);
	}
	long long removed = 0, kept = 0, failed = 0, expired_n = 0, waiting = 0;
	for (struct dirent *de; removed < max && (de = readdir(d));) {
		struct stat st;
		if (!run_dir_name(de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		/* A run still going holds supervisor.json naming a live sbx-run. */
		pid_t owner;
		bool expired;
		if (sbx_supervisor_alive(dirfd(d), de->d_name, &owner)) {
			kept++;
			continue;
		}
		bool waits = pending_keeps(state, de->d_name, now * 1000, &expired);
		expired_n += expired;
		waiting += waits;
		if (waits || pending_only || now - st.st_mtim.tv_sec < older_than) {
			kept++;
			continue;
		}
		if (sbx_remove_tree_at(dirfd(d), de->d_name) == 0)
			removed++;
		else
			failed++;
	}
	closedir(d);
	return sbx_json_answer(json_pack("{s:I,s:I,s:I,s:I,s:I}", "removed", removed, "kept", kept, "failed", failed,
					 "pendingExpired", expired_n, "pendingWaiting", waiting));
}
