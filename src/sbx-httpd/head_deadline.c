/* head_deadline.c — a request head must arrive whole within
 * CONNECTION_IDLE_S: libmicrohttpd only times out silence, so a client
 * trickling a header byte now and then would hold its slot for ever. A
 * watchdog shuts such a socket down; the poll thread then closes it. */
#include "head_deadline.h"
#include "connections.h"
#include "metrics.h"
#include "../lib/clock.h"

#include "thread.h"

#include <pthread.h>
#include <stdbool.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct head_watch {
	int fd;
	long long since_ms;          /* when its current head began */
	bool in_head;                /* no complete head yet */
	struct head_watch *prev, *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct head_watch *watched;

void head_watch_open(struct MHD_Connection *conn, void **socket_context)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct head_watch *w = info ? calloc(1, sizeof(*w)) : NULL;
	*socket_context = w;
	if (!w)
		return;
	w->fd = info->connect_fd;
	w->since_ms = sbx_mono_ms();
	w->in_head = true;
	pthread_mutex_lock(&lock);
	w->next = watched;
	if (watched)
		watched->prev = w;
	watched = w;
	pthread_mutex_unlock(&lock);
}

/* Called before libmicrohttpd closes the socket: the watchdog never
 * touches an fd number that may already belong to someone else. */
void head_watch_close(void *socket_context)
{
	struct head_watch *w = socket_context;
	if (!w)
		return;
	pthread_mutex_lock(&lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		watched = w->next;
	if (w->next)
		w->next->prev = w->prev;
	pthread_mutex_unlock(&lock);
	free(w);
}

static struct head_watch *of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return info ? info->socket_context : NULL;
}

void head_watch_mark(struct MHD_Connection *conn, bool in_head)
{
	struct head_watch *w = of(conn);
	if (!w)
		return;
	pthread_mutex_lock(&lock);
	w->in_head = in_head;
	w->since_ms = sbx_mono_ms();
	pthread_mutex_unlock(&lock);
}

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		sleep(1); /* a period, not a wait for anything: the deadline is 30 s */
		long long now = sbx_mono_ms();
		pthread_mutex_lock(&lock);
		for (struct head_watch *w = watched; w; w = w->next)
			if (w->in_head && now - w->since_ms > CONNECTION_IDLE_S * 1000LL) {
				shutdown(w->fd, SHUT_RDWR);
				w->in_head = false; /* once */
				metrics_refused(METRICS_REFUSED_HEAD_DEADLINE);
			}
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

void head_watch_start(void)
{
	thread_detached(watchdog, NULL, 64u << 10, "head-deadline", "no watchdog thread: slow request heads are not cut");
}
