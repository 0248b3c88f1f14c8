/* hammer.c — a workload for bench-denials: N refused ptrace calls in a
 * loop; prints how many failed with which errno. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, eperm = 0, enosys = 0, other = 0;
	for (long i = 0; i < n; i++) {
		if (syscall(SYS_ptrace, 0, 0, 0, 0) == 0)
			other++;
		else if (errno == EPERM)
			eperm++;
		else if (errno == ENOSYS)
			enosys++;
		else
			other++;
	}
	printf("calls %ld EPERM %ld ENOSYS %ld other %ld\n", n, eperm, enosys, other);
	return other != 0;
}
