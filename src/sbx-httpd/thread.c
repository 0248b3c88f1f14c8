/* thread.c — a detached helper thread with a small stack, or a warning
 * saying what goes without it. */
#include "thread.h"
#include "../lib/diag.h"

#include <pthread.h>

bool thread_detached(void *(*fn)(void *), void *arg, size_t stack, const char *code, const char *lost)
{
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, stack);
	bool ok = pthread_create(&t, &attr, fn, arg) == 0;
	pthread_attr_destroy(&attr);
	if (!ok)
		sbx_diag("warning", code, NULL, "%s", lost);
	return ok;
}
