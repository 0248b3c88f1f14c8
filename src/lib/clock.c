/* clock.c — wall-clock and monotonic milliseconds, and ISO-8601 form. */
#include "clock.h"

#include <stdio.h>
#include <time.h>

long long sbx_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long sbx_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sbx_iso_time(long long ms, char out[SBX_ISO_TIME_SIZE])
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t n = strftime(out, SBX_ISO_TIME_SIZE, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, SBX_ISO_TIME_SIZE - n, ".%03dZ", (int)(ms % 1000));
}
