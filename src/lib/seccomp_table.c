/* seccomp_table.c — what the sandbox may not do, and why. Only EPERM, ENOSYS
 * (so libc falls back) and EAFNOSUPPORT are used; foreign ABIs (i386
 * int $0x80, x32, AArch32) are killed by the filter's arch check. */
#include "seccomp_table.h"

#include <errno.h>
#include <string.h>

#define ALL SBX_PROFILE_ALL
#define BASELINE_ONLY SBX_PROFILE_BIT(SBX_SECCOMP_BASELINE)

const struct sbx_seccomp_rule sbx_seccomp_rules[] = {
	/* Reaching into other processes. */
	{ "ptrace", EPERM, SBX_MATCH_ANY, 0, ALL, "inspect or control other processes" },
	{ "process_vm_readv", EPERM, SBX_MATCH_ANY, 0, ALL, "read another process's memory" },
	{ "process_vm_writev", EPERM, SBX_MATCH_ANY, 0, ALL, "write another process's memory" },
	{ "kcmp", EPERM, SBX_MATCH_ANY, 0, ALL, "probe other processes' kernel objects (KASLR leaks)" },
	{ "pidfd_getfd", EPERM, SBX_MATCH_ANY, 0, ALL, "steal another process's file descriptors" },
	{ "process_madvise", EPERM, SBX_MATCH_ANY, 0, ALL, "act on another process's memory" },
	/* Mounts and namespaces: bwrap built the only view the workload gets. */
	{ "mount", EPERM, SBX_MATCH_ANY, 0, ALL, "change the mount table" },
	{ "umount2", EPERM, SBX_MATCH_ANY, 0, ALL, "uncover what bwrap mounted over" },
	{ "pivot_root", EPERM, SBX_MATCH_ANY, 0, ALL, "change the root" },
	{ "chroot", EPERM, SBX_MATCH_ANY, 0, ALL, "change the root" },
	{ "unshare", EPERM, SBX_MATCH_ANY, 0, ALL, "new namespaces: kernel attack surface (user namespaces above all)" },
	{ "setns", EPERM, SBX_MATCH_ANY, 0, ALL, "enter other namespaces" },
	{ "clone", EPERM, SBX_MATCH_CLONE_NEWNS_FLAGS, 0, ALL,
	  "new namespaces through clone(); keeps nested user namespaces blocked where --disable-userns is missing" },
	/* The new mount API and clone3: ENOSYS so libc falls back (CVE-2021-41133). */
	{ "clone3", ENOSYS, SBX_MATCH_ANY, 0, ALL, "flags are behind a pointer seccomp cannot read (CVE-2021-41133)" },
	{ "open_tree", ENOSYS, SBX_MATCH_ANY, 0, ALL, "new mount API (CVE-2021-41133)" },
	{ "move_mount", ENOSYS, SBX_MATCH_ANY, 0, ALL, "new mount API (CVE-2021-41133)" },
	{ "fsopen", ENOSYS, SBX_MATCH_ANY, 0, ALL, "new mount API (CVE-2021-41133)" },
	{ "fsconfig", ENOSYS, SBX_MATCH_ANY, 0, ALL, "new mount API (CVE-2021-41133)" },
	{ "fsmount", ENOSYS, SBX_MATCH_ANY, 0, ALL, "new mount API (CVE-2021-41133)" },
	{ "fspick", ENOSYS, SBX_MATCH_ANY, 0, ALL, "new mount API (CVE-2021-41133)" },
	{ "mount_setattr", ENOSYS, SBX_MATCH_ANY, 0, ALL, "new mount API (CVE-2021-41133)" },
	/* The machine itself. */
	{ "swapon", EPERM, SBX_MATCH_ANY, 0, ALL, "host swap configuration" },
	{ "swapoff", EPERM, SBX_MATCH_ANY, 0, ALL, "host swap configuration" },
	{ "reboot", EPERM, SBX_MATCH_ANY, 0, ALL, "reboot the host" },
	{ "init_module", EPERM, SBX_MATCH_ANY, 0, ALL, "load kernel code" },
	{ "finit_module", EPERM, SBX_MATCH_ANY, 0, ALL, "load kernel code" },
	{ "delete_module", EPERM, SBX_MATCH_ANY, 0, ALL, "unload kernel code" },
	{ "kexec_load", EPERM, SBX_MATCH_ANY, 0, ALL, "replace the running kernel" },
	{ "kexec_file_load", EPERM, SBX_MATCH_ANY, 0, ALL, "replace the running kernel" },
	{ "syslog", EPERM, SBX_MATCH_ANY, 0, ALL, "read the kernel log (addresses, other tenants)" },
	{ "acct", EPERM, SBX_MATCH_ANY, 0, ALL, "host process accounting" },
	{ "quotactl", EPERM, SBX_MATCH_ANY, 0, ALL, "host disk quotas" },
	{ "uselib", EPERM, SBX_MATCH_ANY, 0, ALL, "obsolete loader call, old exploit vector" },
	/* Kernel keyrings are not namespaced. */
	{ "add_key", EPERM, SBX_MATCH_ANY, 0, ALL, "kernel keyring, shared with the host" },
	{ "request_key", EPERM, SBX_MATCH_ANY, 0, ALL, "kernel keyring, shared with the host" },
	{ "keyctl", EPERM, SBX_MATCH_ANY, 0, ALL, "kernel keyring, shared with the host" },
	/* Large kernel attack surface the workloads never need. */
	{ "open_by_handle_at", EPERM, SBX_MATCH_ANY, 0, ALL, "open files by handle past the mount view (the 'shocker' escape)" },
	{ "bpf", EPERM, SBX_MATCH_ANY, 0, ALL, "eBPF: kernel attack surface" },
	{ "userfaultfd", EPERM, SBX_MATCH_ANY, 0, ALL, "stalls the kernel at will: a race-exploit primitive" },
	{ "perf_event_open", EPERM, SBX_MATCH_ANY, 0, ALL, "kernel attack surface, side channels" },
	{ "io_uring_setup", EPERM, SBX_MATCH_ANY, 0, ALL, "io_uring: syscalls seccomp never sees, many CVEs" },
	{ "io_uring_enter", EPERM, SBX_MATCH_ANY, 0, ALL, "io_uring: syscalls seccomp never sees, many CVEs" },
	{ "io_uring_register", EPERM, SBX_MATCH_ANY, 0, ALL, "io_uring: syscalls seccomp never sees, many CVEs" },
	{ "modify_ldt", EPERM, SBX_MATCH_ANY, 0, ALL,
	  "per-process segment descriptors: 16-bit code, old exploit vector (CVE-2015-5157, CVE-2017-17053)" },
	{ "personality", EPERM, SBX_MATCH_PERSONALITY_SET, 0, ALL,
	  "execution domains weaken ASLR (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE)" },
	/* Typing into the terminal of whoever started us. */
	{ "ioctl", EPERM, SBX_MATCH_IOCTL_REQUEST, 0x5412 /* TIOCSTI */, ALL,
	  "inject input into the controlling terminal (CVE-2017-5226, CVE-2023-28100)" },
	{ "ioctl", EPERM, SBX_MATCH_IOCTL_REQUEST, 0x541C /* TIOCLINUX */, ALL,
	  "console selection paste into the terminal (CVE-2023-28100, CVE-2019-10063 class)" },
	/* Sockets: no inet without the network profile; odd families never. */
	{ "socket", EPERM, SBX_MATCH_SOCKET_INET, 0, BASELINE_ONLY, "no network in network mode none" },
	{ "socketpair", EPERM, SBX_MATCH_SOCKET_INET, 0, BASELINE_ONLY, "no network in network mode none" },
	{ "socket", EAFNOSUPPORT, SBX_MATCH_SOCKET_OTHER, 0, ALL,
	  "netlink, packet, vsock (not netns-confined), alg, key, ...: kernel attack surface" },
	{ "socketpair", EAFNOSUPPORT, SBX_MATCH_SOCKET_OTHER, 0, ALL,
	  "only AF_UNIX pairs are needed (asyncio, multiprocessing)" },
};
const size_t sbx_seccomp_rules_len = sizeof(sbx_seccomp_rules) / sizeof(sbx_seccomp_rules[0]);

const struct sbx_seccomp_rule sbx_seccomp_gateway_rules[] = {
	{ "execve", EPERM, SBX_MATCH_ANY, 0, 0, "the gateway runs no program: a hijacked gateway starts nothing" },
	{ "execveat", EPERM, SBX_MATCH_ANY, 0, 0, "the gateway runs no program: a hijacked gateway starts nothing" },
	{ "fork", EPERM, SBX_MATCH_ANY, 0, 0, "the gateway is one process with threads" },
	{ "vfork", EPERM, SBX_MATCH_ANY, 0, 0, "the gateway is one process with threads" },
};
const size_t sbx_seccomp_gateway_rules_len = sizeof(sbx_seccomp_gateway_rules) / sizeof(sbx_seccomp_gateway_rules[0]);

int sbx_seccomp_rule_reported(const struct sbx_seccomp_rule *r)
{
	return r->error == EPERM;
}

static const char *const profile_names[SBX_SECCOMP_PROFILE_COUNT] = { "baseline", "network", "npu" };

const char *sbx_seccomp_profile_name(enum sbx_seccomp_profile p)
{
	return p < SBX_SECCOMP_PROFILE_COUNT ? profile_names[p] : "unknown";
}

int sbx_seccomp_profile_from_name(const char *name)
{
	for (int i = 0; i < SBX_SECCOMP_PROFILE_COUNT; i++)
		if (strcmp(profile_names[i], name) == 0)
			return i;
	return -1;
}
