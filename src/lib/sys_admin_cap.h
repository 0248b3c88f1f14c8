/* sys_admin_cap.h — CAP_SYS_ADMIN, which a root sbx-run keeps in its
 * bounding set for one purpose (sbx-launch's bind staging): held effective
 * only around that step, and never by any other helper. */
#ifndef SBX_SYS_ADMIN_CAP_H
#define SBX_SYS_ADMIN_CAP_H

#include <stdbool.h>

/* In a helper's child before exec (async-signal-safe): CAP_SYS_ADMIN and
 * CAP_DAC_OVERRIDE leave the bounding set, so an exec'd root helper never
 * holds them. A failure (no CAP_SETPCAP) leaves the set as given. */
void sbx_helper_bounds_narrow(void);

/* Raises (on) or lowers CAP_SYS_ADMIN in the effective set; permitted is
 * untouched. 0, or -1 when it is not permitted (nothing changed). */
int sbx_sys_admin_effective(bool on);

/* Drops CAP_SYS_ADMIN from the effective, permitted and bounding sets for
 * good (where held). */
void sbx_sys_admin_drop(void);

#endif
