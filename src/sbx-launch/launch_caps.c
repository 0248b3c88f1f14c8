/* launch_caps.c — a root sbx-launch keeps the capabilities of its own steps
 * (the ownership walk, opening what it binds, the uid switch, the bounding
 * set's narrowing, the bind staging) and nothing more until the switch. */
#include "launch_caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const int kept[] = { CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER,
			    CAP_SETUID, CAP_SETGID,       CAP_SETPCAP,         CAP_SYS_ADMIN };

void launch_caps_narrow(void)
{
	if (geteuid() != 0)
		return;
	uint64_t keep = 0;
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		keep |= 1ull << kept[i];
	/* The bounding set first, while setpcap is still effective (without
	 * it, a container's, the set stays as given: nothing more to do). */
	for (int cap = 0; cap < 64; cap++)
		if (!(keep & (1ull << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL)
			break; /* past the kernel's last capability */
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) != 0)
		return;
	uint64_t effective = keep & ~(1ull << CAP_SYS_ADMIN); /* raised by the staging alone */
	for (int w = 0; w < 2; w++) {
		d[w].effective &= (uint32_t)(effective >> (32 * w));
		d[w].permitted &= (uint32_t)(keep >> (32 * w));
		d[w].inheritable &= (uint32_t)(keep >> (32 * w));
	}
	(void)syscall(SYS_capset, &h, d);
}
