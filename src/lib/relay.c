/* relay.c — socket relays with limits (recv/send through a buffer per
 * direction), and a connect that gives up in time. */
#include "relay.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Per direction, grown while reads fill it: small for chatty tunnels, 4 MiB
 * for bulk ones. Chosen by measurement on loopback (bench/bench-egress.sh,
 * 1 GiB): recv/send through 4 MiB took about 0.33 s, through 256 KiB 0.43 s,
 * and splice(2) through a pipe 0.5 s; see sbx-egress(1). */
#define RELAY_BUFFER_MIN (64 * 1024)
#define RELAY_BUFFER_MAX (4 * 1024 * 1024)

long long sbx_monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The poll timeout the limits leave; 0 when the deadline has passed. */
static int wait_ms(const struct sbx_relay_limits *lim)
{
	long long ms = lim->idle_ms > 0 ? lim->idle_ms : -1;
	if (lim->deadline_ms) {
		long long left = lim->deadline_ms - sbx_monotonic_ms();
		if (left < 0)
			left = 0;
		if (ms < 0 || left < ms)
			ms = left;
	}
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static int poll_limited(struct pollfd *fds, nfds_t n, const struct sbx_relay_limits *lim)
{
	for (;;) {
		int ms = wait_ms(lim);
		int rc = ms == 0 ? 0 : poll(fds, n, ms);
		if (rc > 0)
			return rc;
		if (rc == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (errno != EINTR)
			return -1;
	}
}

int sbx_relay_wait(int fd, short events, const struct sbx_relay_limits *lim)
{
	struct pollfd p = { .fd = fd, .events = events };
	return poll_limited(&p, 1, lim) < 0 ? -1 : 0;
}

int sbx_relay_write_all(int fd, const void *buf, size_t n, const struct sbx_relay_limits *lim)
{
	const char *p = buf;
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			return -1;
		} else if (w < 0 && errno == EAGAIN && sbx_relay_wait(fd, POLLOUT, lim) != 0) {
			return -1;
		}
	}
	return 0;
}

/* One direction of a relay: from → buffer → to. */
struct leg {
	int from, to;
	char *buf;
	size_t cap;
	size_t start, end;     /* bytes [start, end) read, still to be written */
	uint64_t limit, moved;
	bool eof, ended;
};

/* The analyzer takes the memset of legs[1] for one of legs[0], whose
 * buffer it then calls leaked; leg_close frees each. */
// NOLINTBEGIN(clang-analyzer-unix.Malloc)
static int leg_open(struct leg *l, int from, int to, uint64_t limit)
{
	memset(l, 0, sizeof(*l));
	l->from = from;
	l->to = to;
	l->limit = limit;
	l->cap = RELAY_BUFFER_MIN;
	return (l->buf = malloc(l->cap)) ? 0 : -1;
}
// NOLINTEND(clang-analyzer-unix.Malloc)

static void leg_close(struct leg *l)
{
	free(l->buf);
}

/* A read that filled the buffer: the stream is bulk, double it (once the
 * bytes in it are written, so nothing moves). */
static void grow(struct leg *l)
{
	if (l->end < l->cap || l->cap >= RELAY_BUFFER_MAX)
		return;
	char *bigger = malloc(l->cap * 2);
	if (!bigger)
		return;
	memcpy(bigger, l->buf, l->end);
	free(l->buf);
	l->buf = bigger;
	l->cap *= 2;
}

/* Moves what can move now without blocking; -1 on a socket error. */
static int leg_step(struct leg *l)
{
	for (;;) {
		bool progress = false;
		uint64_t want = l->limit - l->moved;
		if (!l->eof && l->start == l->end && want > 0) {
			ssize_t n = recv(l->from, l->buf, want < l->cap ? (size_t)want : l->cap, 0);
			if (n > 0) {
				l->start = 0;
				l->end = (size_t)n;
				progress = true;
				grow(l);
			} else if (n == 0) {
				l->eof = true;
			} else if (errno != EAGAIN && errno != EINTR) {
				return -1;
			}
		}
		if (l->start < l->end) {
			ssize_t n = send(l->to, l->buf + l->start, l->end - l->start, MSG_NOSIGNAL);
			if (n > 0) {
				l->start += (size_t)n;
				l->moved += (uint64_t)n;
				progress = true;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				return -1;
			}
		}
		if (l->moved == l->limit)
			l->eof = true;
		if (!progress)
			return 0;
	}
}

/* What this leg waits for next, or 0 once it has nothing more to do. */
static short leg_events(const struct leg *l, int *fd)
{
	if (l->start < l->end) {
		*fd = l->to;
		return POLLOUT;
	}
	if (!l->eof) {
		*fd = l->from;
		return POLLIN;
	}
	return 0;
}

int sbx_relay_tunnel(int a, int b, const struct sbx_relay_limits *lim, uint64_t *a_to_b, uint64_t *b_to_a)
{
	struct leg legs[2];
	int rc = 0;

	*a_to_b = *b_to_a = 0;
	if (leg_open(&legs[0], a, b, UINT64_MAX) != 0)
		return -1;
	if (leg_open(&legs[1], b, a, UINT64_MAX) != 0) {
		leg_close(&legs[0]);
		return -1;
	}
	for (;;) {
		struct pollfd fds[2];
		nfds_t n = 0;
		for (int i = 0; i < 2; i++) {
			struct leg *l = &legs[i];
			if (leg_step(l) != 0) {
				rc = -1;
				goto out;
			}
			short ev = leg_events(l, &fds[n].fd);
			if (ev) {
				fds[n].events = ev;
				fds[n++].revents = 0;
			} else if (!l->ended) {
				shutdown(l->to, SHUT_WR);
				l->ended = true;
			}
		}
		if (n == 0)
			break;
		if (poll_limited(fds, n, lim) < 0) {
			rc = -1;
			break;
		}
	}
out:
	*a_to_b = legs[0].moved;
	*b_to_a = legs[1].moved;
	leg_close(&legs[0]);
	leg_close(&legs[1]);
	return rc;
}

int sbx_relay_copy(int from, int to, uint64_t n, const struct sbx_relay_limits *lim, uint64_t *moved)
{
	struct leg l;
	int rc = 0;

	*moved = 0;
	if (n == 0)
		return 0;
	if (leg_open(&l, from, to, n) != 0)
		return -1;
	for (;;) {
		if (leg_step(&l) != 0) {
			rc = -1;
			break;
		}
		struct pollfd p;
		p.revents = 0;
		if (!(p.events = leg_events(&l, &p.fd)))
			break;
		if (poll_limited(&p, 1, lim) < 0) {
			rc = -1;
			break;
		}
	}
	*moved = l.moved;
	leg_close(&l);
	if (rc == 0 && n != UINT64_MAX && l.moved != n) {
		errno = EPIPE;
		rc = -1;
	}
	return rc;
}

int sbx_connect_within(const struct sockaddr *sa, socklen_t len, int timeout_ms)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, sa, len) == 0)
		return fd;
	if (errno != EINPROGRESS) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	struct sbx_relay_limits lim = { .idle_ms = timeout_ms };
	int err = 0;
	socklen_t elen = sizeof(err);
	if (sbx_relay_wait(fd, POLLOUT, &lim) != 0)
		err = errno;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0)
		err = errno;
	if (err) {
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}
