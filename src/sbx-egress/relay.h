/* relay.h — moving bytes between two sockets the way a proxy must: with
 * idle and lifetime limits, half-close propagated, every byte counted. */
#ifndef SBX_RELAY_H
#define SBX_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct sbx_relay_limits {
	int idle_ms;            /* no byte either way for this long ends it */
	long long deadline_ms;  /* CLOCK_MONOTONIC ms; 0: none */
};

long long sbx_monotonic_ms(void);

/* Waits until fd is ready for events; 0, or -1 with errno ETIMEDOUT when
 * the idle time or the deadline passes first. */
int sbx_relay_wait(int fd, short events, const struct sbx_relay_limits *lim);

/* Writes all n bytes to a non-blocking socket within the limits. */
int sbx_relay_write_all(int fd, const void *buf, size_t n, const struct sbx_relay_limits *lim);

/* Moves bytes both ways between two non-blocking sockets until both sides
 * have ended (each EOF is passed on as a shutdown of the other's write
 * side), a socket fails, or a limit passes (-1, errno ETIMEDOUT). The
 * counts hold what was delivered either way. A bulk direction moves through
 * a pipe with splice(2), which has no MSG_NOSIGNAL: callers of this and of
 * sbx_relay_copy ignore SIGPIPE. */
int sbx_relay_tunnel(int a, int b, const struct sbx_relay_limits *lim, uint64_t *a_to_b, uint64_t *b_to_a);

/* Moves exactly n bytes from one socket to another (n == UINT64_MAX: until
 * EOF). An EOF before n bytes is an error (errno EPIPE). */
int sbx_relay_copy(int from, int to, uint64_t n, const struct sbx_relay_limits *lim, uint64_t *moved);

/* A non-blocking connect within timeout_ms: the connected non-blocking
 * socket, or -1 with errno (ETIMEDOUT when the time ran out). */
int sbx_connect_within(const struct sockaddr *sa, socklen_t len, int timeout_ms);

#endif
