/* clock.h — the wall clock as sbx prints it: milliseconds since the epoch
 * and ISO-8601 UTC with milliseconds (JavaScript's toISOString). */
#ifndef SBX_CLOCK_H
#define SBX_CLOCK_H

#define SBX_ISO_TIME_SIZE 32

long long sbx_wall_ms(void);
/* Monotonic milliseconds, for deadlines and intervals. */
long long sbx_mono_ms(void);
/* "2026-11-29T11:08:09.123Z" */
void sbx_iso_time(long long ms, char out[SBX_ISO_TIME_SIZE]);

#endif
