/* control.c — the one request besides HTTP, from root or the uid that
 * started the gateway (sbx-run): 0x01 and a pid (4 bytes, host order) asks
 * for the refusal counts held for that pid to be written now; answered with
 * one byte once they are in the log. */
#include "egress.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

void control_serve(struct gateway *g, int uds, const struct admission *ad, const struct sbx_relay_limits *lim)
{
	int32_t pid = 0;
	size_t got = 0;
	while (got < sizeof(pid) && sbx_relay_wait(uds, POLLIN, lim) == 0) {
		ssize_t n = recv(uds, (char *)&pid + got, sizeof(pid) - got, 0);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			break;
		got += n > 0 ? (size_t)n : 0;
	}
	/* Anyone else is read (so the close is clean) and not answered. */
	if (got == sizeof(pid) && pid > 0 && (ad->uid == 0 || ad->uid == g->control_uid)) {
		peers_flush_pid(g, (pid_t)pid);
		char done = 1;
		(void)send(uds, &done, 1, MSG_NOSIGNAL);
	}
	close(uds);
}
