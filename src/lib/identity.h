/* identity.h — the sandbox's /etc/passwd and /etc/group: exactly one record
 * for the uid/gid the workload runs as (CANN and others treat a failed
 * getpwuid as fatal), written once per uid/gid, atomically. */
#ifndef SBX_IDENTITY_H
#define SBX_IDENTITY_H

#include "error.h"

#include <limits.h>
#include <sys/types.h>

struct sbx_identity {
	char passwd[PATH_MAX];
	char group[PATH_MAX];
};

/* Ensures <data_dir>/runtime/identity/{passwd,group}-<uid>-<gid> exist with
 * the right content (directory 0755 and files 0644: the unprivileged
 * workload uid must be able to read what bwrap binds). */
int sbx_identity_files(const char *data_dir, uid_t uid, gid_t gid, struct sbx_identity *id,
		       struct sbx_error *e);

#endif
