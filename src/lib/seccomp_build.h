/* seccomp_build.h — compiling the rule table into a filter for one profile
 * and arch, and handing a launch its program as a sealed memfd, compiled
 * once per (profile, arch, libseccomp version, table) and then cached. */
#ifndef SBX_SECCOMP_BUILD_H
#define SBX_SECCOMP_BUILD_H

#include "error.h"
#include "seccomp_table.h"

#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "x86_64" or "aarch64" for a libseccomp arch token; NULL otherwise. */
const char *sbx_seccomp_arch_name(uint32_t arch);

/* Builds the filter for profile p on arch (SCMP_ARCH_NATIVE or a token of
 * x86_64/aarch64). Foreign ABIs are killed; release with seccomp_release. */
scmp_filter_ctx sbx_seccomp_build(enum sbx_seccomp_profile p, uint32_t arch, struct sbx_error *e);

/* A launch that reports its denials splits the filter in two, designed
 * together: an errno in one filter would win over a notification in the
 * other, so the reported rows (sbx_seccomp_rule_reported) are left out of
 * the filter bwrap loads and make up the one the sandbox's first program
 * loads with a listener (sbx-seccomp-notify(1)). If that listener is gone
 * the kernel still refuses those calls (ENOSYS). */
enum sbx_seccomp_part {
	SBX_FILTER_WHOLE,      /* every row, its errno */
	SBX_FILTER_UNREPORTED, /* the rows not reported, their errno */
	SBX_FILTER_NOTIFY,     /* the reported rows, a user notification each */
};
scmp_filter_ctx sbx_seccomp_build_part(enum sbx_seccomp_profile p, enum sbx_seccomp_part part, uint32_t arch,
				       struct sbx_error *e);

/* The egress gateway's filter on arch: the rows every profile shares and
 * the gateway's own (seccomp_table.h); other ABIs killed the same way. */
scmp_filter_ctx sbx_seccomp_build_gateway(uint32_t arch, struct sbx_error *e);

struct sbx_seccomp_program {
	int fd;                 /* sealed memfd at offset 0, CLOEXEC */
	size_t instructions;    /* BPF instructions (8 bytes each) */
	char arch[16];
	char libseccomp[32];    /* "2.5.4" */
	bool from_cache;
};

/* The native program of profile p. cache_dir NULL or "" disables the cache.
 * A cache file is trusted only if this uid owns it and nobody else can
 * write it; otherwise it is rebuilt. */
int sbx_seccomp_program(enum sbx_seccomp_profile p, const char *cache_dir,
			struct sbx_seccomp_program *out, struct sbx_error *e);
/* The same for one part of a split filter (cached under its own name). */
int sbx_seccomp_program_part(enum sbx_seccomp_profile p, enum sbx_seccomp_part part, const char *cache_dir,
			     struct sbx_seccomp_program *out, struct sbx_error *e);

#endif
