/* fd_pass.h — open files handed between two processes over a Unix socket
 * (SCM_RIGHTS): a stage opens beneath its root, its caller serves the fd,
 * and no name is resolved twice. */
#ifndef SBX_FD_PASS_H
#define SBX_FD_PASS_H

#include <stddef.h>
#include <sys/socket.h>

/* Sends fd (with one byte) on sock; 0, or -1 with errno. */
int sbx_fd_send(int sock, int fd);
/* The one fd waiting on sock (O_CLOEXEC), without blocking; -1 with errno
 * (EAGAIN: none was sent). Any other fd that came along is closed. */
int sbx_fd_recv(int sock);
/* The fds a received message carries (SCM_RIGHTS), the first max of
 * them into fds; any more are closed. Returns how many were taken. */
size_t sbx_fd_take(const struct msghdr *msg, int *fds, size_t max);

#endif
