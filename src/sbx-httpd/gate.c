/* gate.c — named FIFO gates: one holder per name at a time, waiters served
 * in arrival order, a waiter that gives up leaves the line. Legacy
 * executions pass the (session, agent) gate, then every execution the
 * gate of its canonical workspace. */
#include "gate.h"
#include "../lib/clock.h"

#include <pthread.h>
#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct waiter {
	char *name;
	struct waiter *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct waiter *line; /* every waiter and holder, in arrival order */

/* The first in line with this name holds the gate. */
static bool first_of_name(const struct waiter *w)
{
	for (const struct waiter *x = line; x; x = x->next)
		if (!strcmp(x->name, w->name))
			return x == w;
	return false;
}

static void leave_line(struct waiter *w)
{
	for (struct waiter **p = &line; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	free(w->name);
	free(w);
	pthread_cond_broadcast(&changed);
}

struct waiter *gate_join(const char *name, long long *joined_ms)
{
	struct waiter *w = calloc(1, sizeof(*w));
	if (!w || !(w->name = strdup(name))) {
		free(w);
		return NULL;
	}
	pthread_mutex_lock(&lock);
	struct waiter **tail = &line;
	while (*tail)
		tail = &(*tail)->next;
	*tail = w;
	/* Taken under the lock: joining order and these times agree. */
	if (joined_ms)
		*joined_ms = sbx_wall_ms();
	pthread_mutex_unlock(&lock);
	return w;
}

struct waiter *gate_enter(const char *name, bool (*give_up)(void *), void *arg)
{
	return gate_wait(gate_join(name, NULL), give_up, arg);
}

struct waiter *gate_wait(struct waiter *w, bool (*give_up)(void *), void *arg)
{
	if (!w)
		return NULL;
	pthread_mutex_lock(&lock);
	while (!first_of_name(w)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&changed, &lock, &ts);
		/* Giving up is checked unlocked: it may look at a socket. */
		pthread_mutex_unlock(&lock);
		bool stop = give_up && give_up(arg);
		pthread_mutex_lock(&lock);
		if (stop && !first_of_name(w)) {
			leave_line(w);
			pthread_mutex_unlock(&lock);
			return NULL;
		}
	}
	pthread_mutex_unlock(&lock);
	return w;
}

void gate_leave(struct waiter *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&lock);
	leave_line(w);
	pthread_mutex_unlock(&lock);
}
