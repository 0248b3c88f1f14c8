/* seccomp_table.h — the sandbox's syscall policy as one table: syscall,
 * errno, which argument pattern, which profiles, and why (with the CVE). */
#ifndef SBX_SECCOMP_TABLE_H
#define SBX_SECCOMP_TABLE_H

#include <stddef.h>

enum sbx_seccomp_profile {
	SBX_SECCOMP_BASELINE, /* network "none": no inet sockets */
	SBX_SECCOMP_NETWORK,  /* egress through the bridge: inet sockets allowed */
	SBX_SECCOMP_NPU,      /* accelerators: like network, no bridge attached */
	SBX_SECCOMP_PROFILE_COUNT,
};

#define SBX_PROFILE_ALL 0x7u
#define SBX_PROFILE_BIT(p) (1u << (p))

/* How a rule looks at the syscall's arguments. */
enum sbx_seccomp_match {
	SBX_MATCH_ANY,               /* every call */
	SBX_MATCH_CLONE_NEWNS_FLAGS, /* clone() with any CLONE_NEW* flag in arg 0 */
	SBX_MATCH_IOCTL_REQUEST,     /* ioctl() whose request (arg 1, low 32 bits) is `value` */
	SBX_MATCH_PERSONALITY_SET,   /* personality() other than PER_LINUX (0) and the query 0xffffffff */
	SBX_MATCH_SOCKET_INET,       /* socket()/socketpair() domain AF_INET or AF_INET6 */
	SBX_MATCH_SOCKET_OTHER,      /* socket()/socketpair() domain other than AF_UNIX/INET/INET6 */
};

struct sbx_seccomp_rule {
	const char *syscall;
	int error;                  /* errno returned: EPERM, ENOSYS or EAFNOSUPPORT */
	enum sbx_seccomp_match match;
	unsigned long value;        /* for SBX_MATCH_IOCTL_REQUEST */
	unsigned profiles;          /* SBX_PROFILE_BIT mask */
	const char *reason;
};

extern const struct sbx_seccomp_rule sbx_seccomp_rules[];
extern const size_t sbx_seccomp_rules_len;

/* The egress gateway's filter (sbx-egress(1)): every row above that holds
 * in all profiles (SBX_PROFILE_ALL), plus these (their profiles field is
 * unused): what the gateway, which only relays sockets, never does. */
extern const struct sbx_seccomp_rule sbx_seccomp_gateway_rules[];
extern const size_t sbx_seccomp_gateway_rules_len;

/* Reported rows (every EPERM row) become a user notification the
 * supervisor answers with the same errno and records as a denial. The
 * ENOSYS and EAFNOSUPPORT rows are never reported: libc probes them on
 * its own (clone3 before clone, netlink in getaddrinfo) and falls back. */
int sbx_seccomp_rule_reported(const struct sbx_seccomp_rule *r);

const char *sbx_seccomp_profile_name(enum sbx_seccomp_profile p);
/* -1 when the name is not a profile. */
int sbx_seccomp_profile_from_name(const char *name);

#endif
