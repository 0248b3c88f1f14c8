/* host_facts.h — the host settings that decide whether bwrap can build a
 * sandbox: user-namespace sysctls, AppArmor's restriction, a setuid bwrap,
 * and the distribution (for install commands). Read once, judged purely. */
#ifndef SBX_HOST_FACTS_H
#define SBX_HOST_FACTS_H

#include <stdbool.h>

struct sbx_host_facts {
	long unprivileged_userns_clone; /* kernel.unprivileged_userns_clone; -1 absent */
	long max_user_namespaces;       /* user.max_user_namespaces; -1 absent */
	long apparmor_restrict_userns;  /* kernel.apparmor_restrict_unprivileged_userns; -1 absent */
	bool bwrap_setuid;              /* the bwrap binary has the setuid bit */
	char os_id[64];                 /* ID= of /etc/os-release, "" unknown */
	char os_id_like[128];           /* ID_LIKE= */
};

/* Reads the facts from /proc/sys, /etc/os-release and bwrap's mode
 * (bwrap_path may be NULL when bwrap is missing). Never fails: what cannot
 * be read is recorded as absent. */
void sbx_host_facts_read(const char *bwrap_path, struct sbx_host_facts *f);

/* The package-manager command that installs bubblewrap on this distribution,
 * or a list for several when the distribution is unknown. */
const char *sbx_bwrap_install_hint(const struct sbx_host_facts *f);

#endif
