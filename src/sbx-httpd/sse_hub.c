/* sse_hub.c — the registry of open event streams: a place per stream up
 * to the cap, the suspension of a stream with nothing to send, and its
 * resumption by a store write (sse_hub_notify) or by the ticker thread
 * when a keep-alive is due or its lifetime is over. */
#include "sse_hub.h"
#include "server.h"
#include "../lib/clock.h"
#include "thread.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#define TICK_MS 1000 /* the keep-alive and lifetime resolution */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t joined = PTHREAD_COND_INITIALIZER;
static struct sse_watch *streams;
static long long count;
static pthread_once_t ticker_once = PTHREAD_ONCE_INIT;

/* Under lock: a suspended stream goes back to its reader. */
static void wake(struct sse_watch *w)
{
	if (w->suspended) {
		w->suspended = false;
		MHD_resume_connection(w->conn);
	} else {
		w->pending = true;
	}
}

/* Once a second while streams are open (none: it waits for one). */
static void *ticker(void *arg)
{
	(void)arg;
	long long keepalive = g_server.cfg.sse_keepalive_s * 1000, lifetime = g_server.cfg.sse_max_s * 1000;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!streams)
			pthread_cond_wait(&joined, &lock);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += TICK_MS / 1000;
		pthread_cond_timedwait(&joined, &lock, &until);
		long long now = sbx_mono_ms();
		for (struct sse_watch *w = streams; w; w = w->next)
			if (w->suspended && (now - w->last_sent_ms >= keepalive || now - w->started_ms >= lifetime))
				wake(w);
	}
	return NULL;
}

static void start_ticker(void)
{
	thread_detached(ticker, NULL, 64u << 10, "sse-ticker", "no ticker thread: idle event streams get no keep-alive");
}

bool sse_hub_join(struct sse_watch *w)
{
	pthread_once(&ticker_once, start_ticker);
	pthread_mutex_lock(&lock);
	bool ok = count < g_server.cfg.sse_max_clients;
	if (ok) {
		count++;
		w->started_ms = w->last_sent_ms = sbx_mono_ms();
		w->next = streams;
		streams = w;
		pthread_cond_signal(&joined);
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

void sse_hub_leave(struct sse_watch *w)
{
	pthread_mutex_lock(&lock);
	for (struct sse_watch **p = &streams; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			count--;
			break;
		}
	pthread_mutex_unlock(&lock);
}

void sse_hub_arm(struct sse_watch *w)
{
	pthread_mutex_lock(&lock);
	w->pending = false;
	pthread_mutex_unlock(&lock);
}

bool sse_hub_suspend(struct sse_watch *w)
{
	pthread_mutex_lock(&lock);
	bool suspend = !w->pending;
	if (suspend) {
		w->suspended = true;
		MHD_suspend_connection(w->conn);
	}
	pthread_mutex_unlock(&lock);
	return suspend;
}

void sse_hub_notify(const char *id)
{
	pthread_mutex_lock(&lock);
	for (struct sse_watch *w = streams; w; w = w->next)
		if (!strcmp(w->id, id))
			wake(w);
	pthread_mutex_unlock(&lock);
}
