/* seccomp_build.c — the table compiled by libseccomp; cached BPF copied into
 * a sealed memfd so bwrap never reads a file someone could swap. */
#include "seccomp_build.h"
#include "atomic_file.h"
#include "exitcodes.h"
#include "fnv.h"
#include "io.h"
#include "seccomp_memfd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_PROGRAM_BYTES (4096 * 8) /* the kernel's BPF_MAXINSNS */

const char *sbx_seccomp_arch_name(uint32_t arch)
{
	if (arch == SCMP_ARCH_X86_64)
		return "x86_64";
	if (arch == SCMP_ARCH_AARCH64)
		return "aarch64";
	return NULL;
}

#define A0_MASKED(mask, value) SCMP_A0(SCMP_CMP_MASKED_EQ, (mask), (value))

/* Adds the libseccomp rules of one table row. Each rule compares one
 * argument once (libseccomp refuses two comparisons of the same argument),
 * so ranges are spelled as sets of masked comparisons. */
static int add_row(scmp_filter_ctx ctx, const struct sbx_seccomp_rule *r, int nr, uint32_t act)
{
	int rc = 0;

	switch (r->match) {
	case SBX_MATCH_ANY:
		return seccomp_rule_add(ctx, act, nr, 0);
	case SBX_MATCH_CLONE_NEWNS_FLAGS: {
		static const unsigned long flags[] = { CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS,
						       CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET };
		for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]) && rc == 0; i++)
			rc = seccomp_rule_add(ctx, act, nr, 1, A0_MASKED(flags[i], flags[i]));
		return rc;
	}
	case SBX_MATCH_IOCTL_REQUEST:
		/* The kernel reads the request as 32 bits: compare only those, so
		 * high bits cannot smuggle TIOCSTI past the rule. */
		return seccomp_rule_add(ctx, act, nr, 1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, r->value));
	case SBX_MATCH_PERSONALITY_SET:
		/* Every 32-bit value but 0 and 0xffffffff has a 1 bit followed
		 * (cyclically) by a 0 bit: one masked rule per position. */
		for (unsigned i = 0; i < 32 && rc == 0; i++) {
			uint64_t bit = 1ull << i, next = 1ull << ((i + 1) % 32);
			rc = seccomp_rule_add(ctx, act, nr, 1, A0_MASKED(bit | next, bit));
		}
		return rc ? rc : seccomp_rule_add(ctx, act, nr, 1, SCMP_A0(SCMP_CMP_GE, 0x100000000ull, 0));
	case SBX_MATCH_SOCKET_INET:
		rc = seccomp_rule_add(ctx, act, nr, 1, A0_MASKED(0xffffffffu, AF_INET));
		return rc ? rc : seccomp_rule_add(ctx, act, nr, 1, A0_MASKED(0xffffffffu, AF_INET6));
	case SBX_MATCH_SOCKET_OTHER:
		/* The domain is an int: every low-32-bit value except AF_UNIX,
		 * AF_INET, AF_INET6 (those are below 16, so any bit from 4 up
		 * marks another family). */
		for (unsigned v = 0; v < 16 && rc == 0; v++)
			if (v != AF_UNIX && v != AF_INET && v != AF_INET6)
				rc = seccomp_rule_add(ctx, act, nr, 1, A0_MASKED(0xffffffffu, v));
		for (unsigned b = 4; b < 32 && rc == 0; b++)
			rc = seccomp_rule_add(ctx, act, nr, 1, A0_MASKED(1ull << b, 1ull << b));
		return rc;
	}
	return -EINVAL;
}

/* An allow-by-default filter for one arch whose other ABIs are killed. */
static scmp_filter_ctx new_filter(const char *what, uint32_t arch, uint32_t *token, struct sbx_error *e)
{
	*token = arch == SCMP_ARCH_NATIVE ? seccomp_arch_native() : arch;
	const char *arch_name = sbx_seccomp_arch_name(*token);
	scmp_filter_ctx ctx;
	int rc;

	if (!arch_name) {
		sbx_error_set(e, SBX_EXIT_NO_SANDBOX, "seccomp-arch",
			      "seccomp profiles exist for x86_64 and aarch64 only (arch token 0x%x)", *token);
		return NULL;
	}
	if (!(ctx = seccomp_init(SCMP_ACT_ALLOW))) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "seccomp-build", "seccomp_init failed");
		return NULL;
	}
	/* Any other ABI (i386 int $0x80, AArch32; x32 numbers, which libseccomp
	 * routes to the same action) kills the whole process. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc == 0 && *token != seccomp_arch_native()) {
		rc = seccomp_arch_add(ctx, *token);
		if (rc == 0)
			rc = seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE);
	}
	if (rc != 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "seccomp-build", "%s filter for %s: %s", what, arch_name,
			      strerror(-rc));
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

/* Adds the rows of part whose profiles include every bit of mask (0: every
 * row): their errno, or a user notification for the notify part. */
static int add_rows(scmp_filter_ctx ctx, uint32_t token, const struct sbx_seccomp_rule *rules, size_t n,
		    unsigned mask, enum sbx_seccomp_part part, struct sbx_error *e)
{
	for (size_t i = 0; i < n; i++) {
		const struct sbx_seccomp_rule *r = &rules[i];
		if ((r->profiles & mask) != mask)
			continue;
		if ((part == SBX_FILTER_UNREPORTED && sbx_seccomp_rule_reported(r)) ||
		    (part == SBX_FILTER_NOTIFY && !sbx_seccomp_rule_reported(r)))
			continue;
		/* A syscall this arch does not have needs no rule there. */
		if (seccomp_syscall_resolve_name_arch(token, r->syscall) < 0)
			continue;
		uint32_t act = part == SBX_FILTER_NOTIFY ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO((uint32_t)r->error);
		int rc = add_row(ctx, r, seccomp_syscall_resolve_name(r->syscall), act);
		if (rc != 0) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "seccomp-build", "rule for %s on %s: %s", r->syscall,
				      sbx_seccomp_arch_name(token), strerror(-rc));
			return -1;
		}
	}
	return 0;
}

/* The kernel forgets a listener once its fd is closed (the supervisor's
 * cap, or its death): a filter loaded after that could take a listener of
 * its own, and the newest filter's notification wins, so the workload
 * could answer its own refused calls with CONTINUE. The notifying filter
 * refuses every new listener as the kernel does while ours is open. */
static int refuse_new_listeners(scmp_filter_ctx ctx, uint32_t token, struct sbx_error *e)
{
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EBUSY), SCMP_SYS(seccomp), 1,
				  SCMP_A1(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
					  SECCOMP_FILTER_FLAG_NEW_LISTENER));
	if (rc != 0)
		sbx_error_set(e, SBX_EXIT_INTERNAL, "seccomp-build", "listener rule on %s: %s",
			      sbx_seccomp_arch_name(token), strerror(-rc));
	return rc;
}

scmp_filter_ctx sbx_seccomp_build_part(enum sbx_seccomp_profile p, enum sbx_seccomp_part part, uint32_t arch,
				       struct sbx_error *e)
{
	uint32_t token;
	scmp_filter_ctx ctx = new_filter(sbx_seccomp_profile_name(p), arch, &token, e);
	if (ctx && (add_rows(ctx, token, sbx_seccomp_rules, sbx_seccomp_rules_len, SBX_PROFILE_BIT(p), part, e) != 0 ||
		    (part == SBX_FILTER_NOTIFY && refuse_new_listeners(ctx, token, e) != 0))) {
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

scmp_filter_ctx sbx_seccomp_build(enum sbx_seccomp_profile p, uint32_t arch, struct sbx_error *e)
{
	return sbx_seccomp_build_part(p, SBX_FILTER_WHOLE, arch, e);
}

scmp_filter_ctx sbx_seccomp_build_gateway(uint32_t arch, struct sbx_error *e)
{
	uint32_t token;
	scmp_filter_ctx ctx = new_filter("gateway", arch, &token, e);
	if (ctx && (add_rows(ctx, token, sbx_seccomp_rules, sbx_seccomp_rules_len, SBX_PROFILE_ALL, SBX_FILTER_WHOLE, e) != 0 ||
		    add_rows(ctx, token, sbx_seccomp_gateway_rules, sbx_seccomp_gateway_rules_len, 0, SBX_FILTER_WHOLE, e) != 0)) {
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

/* Bumped when the rules this file adds beside the table change. */
#define BUILD_REVISION "notify-refuses-listeners"

/* A fingerprint of the table and of how it is compiled, so a changed
 * table or compiler never reuses an old program. */
static uint64_t table_digest(void)
{
	uint64_t h = sbx_fnv1a64(SBX_FNV_INIT, BUILD_REVISION, sizeof(BUILD_REVISION) - 1);
	for (size_t i = 0; i < sbx_seccomp_rules_len; i++) {
		const struct sbx_seccomp_rule *r = &sbx_seccomp_rules[i];
		char row[128];
		int n = snprintf(row, sizeof(row), "%s/%d/%d/%lu/%u;", r->syscall, r->error,
				 (int)r->match, r->value, r->profiles);
		h = sbx_fnv1a64(h, row, n > 0 && (size_t)n < sizeof(row) ? (size_t)n : 0);
	}
	return h;
}

static void describe(struct sbx_seccomp_program *out)
{
	const struct scmp_version *v = seccomp_version();
	snprintf(out->arch, sizeof(out->arch), "%s", sbx_seccomp_arch_name(seccomp_arch_native()));
	snprintf(out->libseccomp, sizeof(out->libseccomp), "%u.%u.%u", v->major, v->minor, v->micro);
}

/* A sealed memfd holding a copy of a trusted cache file, or -1. */
static int load_cached(const char *path, size_t *size)
{
	struct stat st;
	struct sbx_error e;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
	    st.st_size <= 0 || st.st_size > MAX_PROGRAM_BYTES || st.st_size % 8 != 0) {
		close(fd);
		return -1;
	}
	size_t len;
	char *buf = sbx_read_fd_capped(fd, MAX_PROGRAM_BYTES, &len, path, &e);
	close(fd);
	if (!buf || len != (size_t)st.st_size) {
		free(buf);
		return -1;
	}
	int mem = memfd_create("sbx-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mem < 0 || sbx_write_all(mem, buf, len) != 0 ||
	    fcntl(mem, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0 ||
	    lseek(mem, 0, SEEK_SET) != 0) {
		if (mem >= 0)
			close(mem);
		free(buf);
		return -1;
	}
	free(buf);
	*size = len;
	return mem;
}

static void store_cached(const char *path, int mem, size_t size)
{
	struct sbx_error e;
	char *buf = malloc(size);

	if (buf && pread(mem, buf, size, 0) == (ssize_t)size)
		sbx_atomic_write(path, buf, size, 0600, &e);
	free(buf);
}

static const char *const part_suffix[] = { "", "-unreported", "-notify" };

int sbx_seccomp_program(enum sbx_seccomp_profile p, const char *cache_dir,
			struct sbx_seccomp_program *out, struct sbx_error *e)
{
	return sbx_seccomp_program_part(p, SBX_FILTER_WHOLE, cache_dir, out, e);
}

int sbx_seccomp_program_part(enum sbx_seccomp_profile p, enum sbx_seccomp_part part, const char *cache_dir,
			     struct sbx_seccomp_program *out, struct sbx_error *e)
{
	char path[PATH_MAX];
	bool cacheable = false;
	size_t size = 0;

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	describe(out);
	if (cache_dir && *cache_dir) {
		int n = snprintf(path, sizeof(path), "%s/seccomp-%s%s-%s-libseccomp%s-%016llx.bpf", cache_dir,
				 sbx_seccomp_profile_name(p), part_suffix[part], out->arch, out->libseccomp,
				 (unsigned long long)table_digest());
		cacheable = n > 0 && (size_t)n < sizeof(path);
	}
	if (cacheable && (out->fd = load_cached(path, &size)) >= 0) {
		out->from_cache = true;
		out->instructions = size / 8;
		return 0;
	}
	scmp_filter_ctx ctx = sbx_seccomp_build_part(p, part, SCMP_ARCH_NATIVE, e);
	if (!ctx)
		return -1;
	out->fd = sbx_seccomp_memfd(ctx, e);
	seccomp_release(ctx);
	if (out->fd < 0)
		return -1;
	struct stat st;
	if (fstat(out->fd, &st) == 0)
		out->instructions = (size_t)st.st_size / 8;
	if (cacheable && st.st_size > 0)
		store_cached(path, out->fd, (size_t)st.st_size);
	return 0;
}
