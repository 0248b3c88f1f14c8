/* seccomp_memfd.c — export BPF to a memfd and seal it against changes. */
#include "seccomp_memfd.h"
#include "exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int sbx_seccomp_memfd(scmp_filter_ctx ctx, struct sbx_error *e)
{
	int fd = memfd_create("sbx-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "seccomp-export", "memfd_create: %s", strerror(errno));
		return -1;
	}
	int rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0) {
		close(fd);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "seccomp-export", "seccomp_export_bpf: %s", strerror(-rc));
		return -1;
	}
	/* Sealed: whoever holds the fd can read the program but never alter it. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0 ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		int err = errno;
		close(fd);
		sbx_error_set(e, SBX_EXIT_INTERNAL, "seccomp-export", "sealing the filter: %s", strerror(err));
		return -1;
	}
	return fd;
}
