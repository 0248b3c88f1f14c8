/* fd_pass.h — one open file handed between two processes over a Unix
 * socket (SCM_RIGHTS): a stage opens beneath its root, its caller serves
 * the fd, and no name is resolved twice. */
#ifndef SBX_FD_PASS_H
#define SBX_FD_PASS_H

/* Sends fd (with one byte) on sock; 0, or -1 with errno. */
int sbx_fd_send(int sock, int fd);
/* The one fd waiting on sock (O_CLOEXEC), without blocking; -1 with errno
 * (EAGAIN: none was sent). Any other fd that came along is closed. */
int sbx_fd_recv(int sock);

#endif
