/* launch_caps.h — what a root sbx-launch holds: only the capabilities its
 * own steps use, whoever started it (sbx-run narrows first; sbx-env and a
 * shell do not). */
#ifndef SBX_LAUNCH_CAPS_H
#define SBX_LAUNCH_CAPS_H

/* As root: every capability but chown, dac_override, dac_read_search,
 * fowner, setuid, setgid, setpcap and sys_admin leaves the bounding,
 * permitted, effective and inheritable sets, and sys_admin stays out of
 * the effective set until the bind staging raises it. Elsewhere a no-op. */
void launch_caps_narrow(void);

#endif
