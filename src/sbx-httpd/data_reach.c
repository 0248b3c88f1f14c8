/* data_reach.c — what cannot work is said at startup: NPU broker jobs run on
 * the host as a workspace's uid (in the sandbox group) and reach it by its
 * path, so every directory above the data dir must let that uid search it. */
#include "data_reach.h"
#include "../lib/diag.h"

#include <stdbool.h>
#include <sys/types.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Whether an account that is neither the owner nor root, with gid as its
 * only group, may search a directory of this mode. */
static bool searchable(const struct stat *st, gid_t gid)
{
	return st->st_gid == gid ? (st->st_mode & S_IXGRP) : (st->st_mode & S_IXOTH);
}

void httpd_check_data_reach(const char *data_dir, gid_t sandbox_gid)
{
	/* A diagnostic only: the names are never used to open anything. */
	char *real = realpath(data_dir, NULL);
	if (!real)
		return;
	char prefix[PATH_MAX];
	size_t n = strlen(real);
	for (size_t end = 1; end <= n && end < sizeof(prefix); end++) {
		if (real[end] != '/' && real[end] != '\0')
			continue;
		memcpy(prefix, real, end);
		prefix[end] = '\0';
		struct stat st;
		if (stat(prefix, &st) != 0 || !S_ISDIR(st.st_mode) || searchable(&st, sandbox_gid))
			continue;
		sbx_diag("warning", "data-dir-unreachable",
			 "chmod o+x that directory (or g+x with the sandbox group), or set SCIENCE_AGENT_DATA_DIR to a "
			 "directory whose parents others may search (e.g. /var/lib/sbx).",
			 "%s (mode %04o) is not searchable by the workspaces' uids: executions work (their binds are "
			 "staged by fd), but NPU broker jobs, which run on the host as those uids and reach a workspace by "
			 "its path, will fail",
			 prefix, (unsigned)(st.st_mode & 07777));
		break;
	}
	free(real);
}
