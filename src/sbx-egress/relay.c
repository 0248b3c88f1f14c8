/* relay.c — socket relays with limits (recv/send through a small buffer per
 * direction, splice(2) through a pipe once a direction is bulk), and a
 * connect that gives up in time. */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Per direction: a 64 KiB buffer; a read that fills it makes the direction
 * bulk, and its bytes then go socket → pipe → socket with splice(2), which
 * moves page references instead of copying (the relay's two copies per byte
 * were most of its CPU). 1 MiB is the largest pipe an unprivileged process
 * gets (fs.pipe-max-size) and bounds the bytes a pipe holds. Without a pipe
 * (past RELAY_PIPES_MAX, fs.pipe-user-pages-soft, or a socket that cannot
 * splice) the buffer grows to 4 MiB instead. Measured with
 * bench/bench-egress.sh; see sbx-egress(1). */
#define RELAY_BUFFER_MIN (64 * 1024)
#define RELAY_BUFFER_MAX (4 * 1024 * 1024)
#define RELAY_PIPE_SIZE (1024 * 1024)
#define RELAY_PIPES_MAX 256 /* pipes open at once in the process: 512 fds */

static atomic_int pipes_open;

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

/* One direction of a relay: from → buffer → to while the stream is small;
 * once a read fills the buffer, from → pipe → to with splice(2). */
struct leg {
	int from, to;
	char *buf;
	size_t cap;
	size_t start, end;     /* bytes [start, end) read, still to be written */
	int pipe[2];           /* -1 until the leg turns bulk */
	size_t piped;          /* bytes in the pipe, at most RELAY_PIPE_SIZE */
	uint64_t limit, moved;
	bool eof, ended, no_pipe;
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
	l->pipe[0] = l->pipe[1] = -1;
	return (l->buf = malloc(l->cap)) ? 0 : -1;
}
// NOLINTEND(clang-analyzer-unix.Malloc)

/* A pipe of RELAY_PIPE_SIZE for a leg turning bulk; false without one. */
static bool open_pipe(struct leg *l)
{
	if (atomic_fetch_add(&pipes_open, 1) >= RELAY_PIPES_MAX) {
		atomic_fetch_sub(&pipes_open, 1);
		return false;
	}
	if (pipe2(l->pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		l->pipe[0] = l->pipe[1] = -1;
		atomic_fetch_sub(&pipes_open, 1);
		return false;
	}
	return true;
}

/* Closes the leg's pipe, if any; the leg keeps to its buffer from now on. */
static void drop_pipe(struct leg *l)
{
	if (l->pipe[0] >= 0) {
		close(l->pipe[0]);
		close(l->pipe[1]);
		atomic_fetch_sub(&pipes_open, 1);
	}
	l->pipe[0] = l->pipe[1] = -1;
	l->no_pipe = true;
}

static void leg_close(struct leg *l)
{
	free(l->buf);
	drop_pipe(l);
}

/* A read that filled the buffer: the stream is bulk. On to a pipe when one
 * of the full size is to be had; else double the buffer (once the bytes in
 * it are written, so nothing moves). */
static void grow(struct leg *l)
{
	if (l->end < l->cap)
		return;
	if (!l->no_pipe) {
		if (open_pipe(l) && fcntl(l->pipe[1], F_SETPIPE_SZ, RELAY_PIPE_SIZE) >= 0)
			return;
		drop_pipe(l);
	}
	if (l->cap >= RELAY_BUFFER_MAX)
		return;
	char *bigger = malloc(l->cap * 2);
	if (!bigger)
		return;
	memcpy(bigger, l->buf, l->end);
	free(l->buf);
	l->buf = bigger;
	l->cap *= 2;
}

/* A splice(2) that moved nothing and must not end the relay. */
static bool splice_waits(void)
{
	return errno == EAGAIN || errno == EINTR;
}

/* Reads what the limit and the buffer or pipe allow; -1 on a socket error. */
static int leg_fill(struct leg *l, bool *progress)
{
	uint64_t want = l->limit - l->moved - (l->end - l->start) - l->piped;
	if (l->eof || want == 0)
		return 0;
	if (l->pipe[0] >= 0) {
		size_t room = RELAY_PIPE_SIZE - l->piped;
		if (room == 0)
			return 0;
		ssize_t n = splice(l->from, NULL, l->pipe[1], NULL, want < room ? (size_t)want : room,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			l->piped += (size_t)n;
			*progress = true;
		} else if (n == 0) {
			l->eof = true;
		} else if (errno == EINVAL && l->piped == 0) {
			drop_pipe(l); /* a socket that cannot splice: the buffer it is */
			*progress = true;
		} else if (!splice_waits()) {
			return -1;
		}
		return 0;
	}
	if (l->start < l->end)
		return 0;
	ssize_t n = recv(l->from, l->buf, want < l->cap ? (size_t)want : l->cap, 0);
	if (n > 0) {
		l->start = 0;
		l->end = (size_t)n;
		*progress = true;
		grow(l);
	} else if (n == 0) {
		l->eof = true;
	} else if (errno != EAGAIN && errno != EINTR) {
		return -1;
	}
	return 0;
}

/* Writes what was read, the buffer before the pipe; -1 on a socket error. */
static int leg_drain(struct leg *l, bool *progress)
{
	ssize_t n;
	if (l->start < l->end) {
		n = send(l->to, l->buf + l->start, l->end - l->start, MSG_NOSIGNAL);
		if (n > 0)
			l->start += (size_t)n;
	} else if (l->piped) {
		n = splice(l->pipe[0], NULL, l->to, NULL, l->piped, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0)
			l->piped -= (size_t)n;
	} else {
		return 0;
	}
	if (n > 0) {
		l->moved += (uint64_t)n;
		*progress = true;
	} else if (n < 0 && !splice_waits()) {
		return -1;
	}
	return 0;
}

/* Moves what can move now without blocking; -1 on a socket error. */
static int leg_step(struct leg *l)
{
	for (;;) {
		bool progress = false;
		if (leg_fill(l, &progress) != 0 || leg_drain(l, &progress) != 0)
			return -1;
		if (l->moved == l->limit)
			l->eof = true;
		if (!progress)
			return 0;
	}
}

/* What this leg waits for next, or 0 once it has nothing more to do. */
static short leg_events(const struct leg *l, int *fd)
{
	if (l->start < l->end || l->piped) {
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
	/* A leg is stepped when poll reported its fd (or on the first round):
	 * the other leg's sockets say nothing about it. */
	bool due[2] = { true, true };
	for (;;) {
		struct pollfd fds[2];
		int slot[2] = { -1, -1 };
		nfds_t n = 0;
		for (int i = 0; i < 2; i++) {
			struct leg *l = &legs[i];
			if (due[i] && leg_step(l) != 0) {
				rc = -1;
				goto out;
			}
			short ev = leg_events(l, &fds[n].fd);
			if (ev) {
				fds[n].events = ev;
				fds[n].revents = 0;
				slot[i] = (int)n++;
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
		for (int i = 0; i < 2; i++)
			due[i] = slot[i] >= 0 && fds[slot[i]].revents;
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
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
	if (fd < 0)
		return -1;
	/* A relay passes writes on as they come: Nagle would hold the second
	 * small one (a body after its head) for the peer's delayed ACK. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
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
