/* passwd_file.h — user lookups in /etc/passwd itself. The system users sbx
 * cares about live there; NSS would load modules (systemd's userdb probes
 * a dozen paths) on every launch. */
#ifndef SBX_PASSWD_FILE_H
#define SBX_PASSWD_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sbx_passwd_entry {
	char name[64];
	uid_t uid;
	gid_t gid;
};

/* By name (name != NULL) or by uid; false when /etc/passwd has no such entry. */
bool sbx_passwd_lookup(const char *name, uid_t uid, struct sbx_passwd_entry *out);

#endif
