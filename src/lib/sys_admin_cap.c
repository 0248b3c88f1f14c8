/* sys_admin_cap.c — CAP_SYS_ADMIN held effective only around bind staging,
 * dropped for good after it, and never handed to another root helper. */
#include "sys_admin_cap.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

void sbx_helper_bounds_narrow(void)
{
	(void)prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0);
	(void)prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0);
}

/* capget/capset by hand: two words, no library state to keep in step. */
static int caps_get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	return (int)syscall(SYS_capget, &h, d);
}

static int caps_set(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	return (int)syscall(SYS_capset, &h, d);
}

#define BIT(c) (1u << ((c) & 31))
#define WORD(c) ((c) >> 5)

int sbx_sys_admin_effective(bool on)
{
	struct __user_cap_data_struct d[2];
	if (caps_get(d) != 0 || !(d[WORD(CAP_SYS_ADMIN)].permitted & BIT(CAP_SYS_ADMIN)))
		return -1;
	if (on)
		d[WORD(CAP_SYS_ADMIN)].effective |= BIT(CAP_SYS_ADMIN);
	else
		d[WORD(CAP_SYS_ADMIN)].effective &= ~BIT(CAP_SYS_ADMIN);
	return caps_set(d);
}

void sbx_sys_admin_drop(void)
{
	struct __user_cap_data_struct d[2];
	(void)prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0);
	if (caps_get(d) != 0)
		return;
	d[WORD(CAP_SYS_ADMIN)].effective &= ~BIT(CAP_SYS_ADMIN);
	d[WORD(CAP_SYS_ADMIN)].permitted &= ~BIT(CAP_SYS_ADMIN);
	d[WORD(CAP_SYS_ADMIN)].inheritable &= ~BIT(CAP_SYS_ADMIN);
	(void)caps_set(d);
}
