/* standby.c — the pool of warm sbx-run processes: one thread (whose life
 * their parent-death signal follows) tops it up to SBX_WARM_RUNNERS while
 * no run is in flight (or when none is left); at shutdown the idle ones get
 * EOF and clean up. */
#include "server.h"
#include "runner.h"
#include "standby.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POOL_MAX 16

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wanted;
	struct standby ready[POOL_MAX];
	int n;
	int in_flight;  /* runs started and not yet let go */
	bool stopping, started;
	pthread_t thread;
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .wanted = PTHREAD_COND_INITIALIZER };

/* One standby: its stdin a socket, fds 3-6 placeholders, stdout and
 * stderr pipes as a cold start has. */
static bool spawn_one(struct standby *w)
{
	struct sbx_error e;
	int sv[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	bool ok = devnull >= 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0 &&
		  pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0;
	int placeholders[4] = { devnull, devnull, devnull, devnull };
	pid_t pid = ok ? runner_spawn(true, sv[1], out[1], err[1], placeholders, 4, &e) : -1;
	int fds[] = { devnull, sv[1], out[1], err[1] };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (pid < 0) {
		int ours[] = { sv[0], out[0], err[0] };
		for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
			if (ours[i] >= 0)
				close(ours[i]);
		return false;
	}
	*w = (struct standby){ .pid = pid, .sock = sv[0], .events_fd = out[0], .err_fd = err[0] };
	return true;
}

static void *keeper(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.lock);
	while (!pool.stopping) {
		/* A start-up competes for the cores with the run in flight: it
		 * waits for that run's answer, unless the pool is empty. */
		if (pool.n >= g_server.cfg.warm_runners || (pool.n > 0 && pool.in_flight > 0)) {
			pthread_cond_wait(&pool.wanted, &pool.lock);
			continue;
		}
		pthread_mutex_unlock(&pool.lock);
		struct standby w;
		bool ok = spawn_one(&w);
		pthread_mutex_lock(&pool.lock);
		if (ok && !pool.stopping) {
			pool.ready[pool.n++] = w;
		} else if (ok) {
			pthread_mutex_unlock(&pool.lock);
			standby_discard(&w);
			pthread_mutex_lock(&pool.lock);
		} else { /* no process now: try again in a second, not in a loop */
			struct timespec at;
			clock_gettime(CLOCK_REALTIME, &at);
			at.tv_sec += 1;
			pthread_cond_timedwait(&pool.wanted, &pool.lock, &at);
		}
	}
	pthread_mutex_unlock(&pool.lock);
	/* Their parent-death signal follows this thread: it outlives them.
	 * EOF with no request: each removes its cgroups and exits 0. */
	for (int i = 0; i < pool.n; i++)
		close(pool.ready[i].sock);
	for (int i = 0; i < pool.n; i++) {
		while (waitpid(pool.ready[i].pid, NULL, 0) < 0 && errno == EINTR)
			;
		close(pool.ready[i].events_fd);
		close(pool.ready[i].err_fd);
	}
	pool.n = 0;
	return NULL;
}

void standby_start(void)
{
	if (g_server.cfg.warm_runners <= 0)
		return;
	pool.started = pthread_create(&pool.thread, NULL, keeper, NULL) == 0;
}

bool standby_take(struct standby *out)
{
	pthread_mutex_lock(&pool.lock);
	bool got = pool.n > 0;
	if (got) /* the oldest: it has had the longest to get ready */
		*out = pool.ready[0], memmove(pool.ready, pool.ready + 1, (size_t)--pool.n * sizeof(pool.ready[0]));
	pthread_cond_signal(&pool.wanted);
	pthread_mutex_unlock(&pool.lock);
	return got;
}

int standby_ready(void)
{
	pthread_mutex_lock(&pool.lock);
	int n = pool.n;
	pthread_mutex_unlock(&pool.lock);
	return n;
}

void standby_run_begins(void)
{
	pthread_mutex_lock(&pool.lock);
	pool.in_flight++;
	pthread_mutex_unlock(&pool.lock);
}

void standby_run_ends(void)
{
	pthread_mutex_lock(&pool.lock);
	if (pool.in_flight > 0 && --pool.in_flight == 0)
		pthread_cond_signal(&pool.wanted);
	pthread_mutex_unlock(&pool.lock);
}

void standby_discard(struct standby *w)
{
	close(w->events_fd);
	close(w->err_fd);
	if (w->sock >= 0)
		close(w->sock);
	kill(w->pid, SIGKILL);
	while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

void standby_stop(void)
{
	if (!pool.started)
		return;
	pthread_mutex_lock(&pool.lock);
	pool.stopping = true;
	pthread_cond_signal(&pool.wanted);
	pthread_mutex_unlock(&pool.lock);
	pthread_join(pool.thread, NULL);
}
