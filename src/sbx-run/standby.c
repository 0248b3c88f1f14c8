/* standby.c — sbx-run --standby: started before its request (by
 * sbx-httpd, to keep one warm), it reads the request from a Unix socket on
 * stdin, the directories it names arriving there as SCM_RIGHTS and set at
 * fds 3, 4, ... as if inherited; EOF ends the request. */
#include "run.h"
#include "../lib/fd_pass.h"
#include "../lib/exitcodes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>


bool run_standby_placeholders(void)
{
	for (int fd = 3; fd < 3 + STANDBY_FDS; fd++)
		if (fcntl(fd, F_GETFD) < 0)
			return false;
	return true;
}

char *run_standby_request(size_t cap, size_t *len, struct sbx_error *e)
{
	char *buf = malloc(cap + 1);
	int got[STANDBY_FDS];
	size_t n_got = 0;
	*len = 0;
	if (!buf) {
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "the request");
		return NULL;
	}
	while (*len < cap) { /* at cap the peek below has said there is no more */
		union {
			struct cmsghdr h;
			char space[CMSG_SPACE(sizeof(int) * STANDBY_FDS)];
		} ctl;
		struct iovec iov = { buf + *len, cap - *len };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
				      .msg_controllen = sizeof(ctl.space) };
		ssize_t n = recvmsg(0, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n >= 0)
			n_got += sbx_fd_take(&msg, got + n_got, STANDBY_FDS - n_got);
		if (n < 0) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", "reading the request: %s", strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		if (msg.msg_flags & MSG_CTRUNC) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-request", "the request brought more than %d directories", STANDBY_FDS);
			goto fail;
		}
		*len += (size_t)n;
		if (*len == cap) { /* one byte more says it is over the cap */
			char extra;
			if (recv(0, &extra, 1, MSG_PEEK) > 0) {
				sbx_error_set(e, SBX_EXIT_USAGE, "input-too-large", "the request is over %zu bytes", cap);
				goto fail;
			}
		}
	}
	/* Where an inherited directory would be: fds 3, 4, ... (placeholders
	 * held them; those beyond what came are closed). */
	for (size_t i = 0; i < STANDBY_FDS; i++) {
		if (i >= n_got) {
			close(3 + (int)i);
			continue;
		}
		if (dup2(got[i], 3 + (int)i) < 0) {
			sbx_error_set(e, SBX_EXIT_INTERNAL, "bad-request", "placing fd %zu: %s", i, strerror(errno));
			goto fail;
		}
		close(got[i]);
	}
	buf[*len] = '\0';
	return buf;
fail:
	for (size_t i = 0; i < n_got; i++)
		close(got[i]);
	free(buf);
	return NULL;
}
