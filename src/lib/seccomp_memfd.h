/* seccomp_memfd.h — compiles a libseccomp filter into a sealed memfd, the
 * form bwrap's --seccomp FD takes: never a file others could read or swap. */
#ifndef SBX_SECCOMP_MEMFD_H
#define SBX_SECCOMP_MEMFD_H

#include "error.h"

#include <seccomp.h>

/* Returns a CLOEXEC fd positioned at 0 holding the BPF program, or -1. */
int sbx_seccomp_memfd(scmp_filter_ctx ctx, struct sbx_error *e);

#endif
