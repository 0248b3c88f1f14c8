/* identity_files.h — the sandbox's /etc/passwd and /etc/group: exactly one record
 * for the uid/gid the workload runs as (CANN and others treat a failed
 * getpwuid as fatal), handed to bwrap as data on a pipe: no file, no fsync. */
#ifndef SBX_IDENTITY_H
#define SBX_IDENTITY_H

#include "../lib/error.h"

#include <sys/types.h>

struct sbx_identity {
	int passwd_fd; /* read ends of pipes holding the whole content */
	int group_fd;
};

/* The records as text (passwd needs 256 bytes, group 128). */
void sbx_identity_text(uid_t uid, gid_t gid, char *passwd, size_t passwd_size, char *group, size_t group_size);
/* Pipes holding the two files' content, their write ends closed. */
int sbx_identity_open(uid_t uid, gid_t gid, struct sbx_identity *id, struct sbx_error *e);
void sbx_identity_close(struct sbx_identity *id);

#endif
