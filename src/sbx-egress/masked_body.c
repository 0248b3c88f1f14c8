/* masked_body.c — a response body from a secret's host on its way to the
 * sandbox: read, its bound values starred out (lengths kept, so framing
 * holds), written; the last bytes that could begin a value wait for more. */
#include "egress.h"
#include "secrets.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

int serve_forward_masked(int from, int to, char *buf, size_t *len, size_t cap, enum sbx_http_body kind,
			 uint64_t length, const struct sbx_relay_limits *lim, uint64_t *moved,
			 const struct gw_secrets *s, const char *host, int port)
{
	size_t body = 0; /* bytes at the front of buf known to be the body's, not yet written */
	size_t keep = gw_secrets_longest(s, host, port);
	keep = keep ? keep - 1 : 0;
	uint64_t left = kind == SBX_BODY_LENGTH ? length : UINT64_MAX;
	bool done = kind == SBX_BODY_NONE || (kind == SBX_BODY_LENGTH && length == 0);
	struct sbx_chunked ch;
	memset(&ch, 0, sizeof(ch));
	*moved = 0;
	for (;;) {
		if (!done && *len > body) {
			size_t avail = *len - body, take;
			if (kind == SBX_BODY_CHUNKED) {
				long k = sbx_chunked_scan(&ch, buf + body, avail, &done);
				if (k < 0) {
					errno = EPROTO;
					return -1;
				}
				take = (size_t)k;
			} else {
				take = avail < left ? avail : (size_t)left;
				left -= take;
				done = kind == SBX_BODY_LENGTH && left == 0;
			}
			body += take;
		}
		gw_secrets_star(s, host, port, buf, body);
		size_t out = done ? body : body > keep ? body - keep : 0;
		if (out) {
			if (sbx_relay_write_all(to, buf, out, lim) != 0)
				return -1;
			memmove(buf, buf + out, *len - out);
			*len -= out;
			body -= out;
			*moved += out;
		}
		if (done && !body)
			return 0;
		if (done)
			continue;
		if (*len == cap) {
			errno = ENOBUFS; /* cannot happen: cap is far above a value's length */
			return -1;
		}
		if (sbx_relay_wait(from, POLLIN, lim) != 0)
			return -1;
		ssize_t r = recv(from, buf + *len, cap - *len, 0);
		if (r == 0 && kind == SBX_BODY_UNTIL_CLOSE)
			done = true;
		else if (r == 0) {
			errno = EPIPE;
			return -1;
		} else if (r < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		else if (r > 0)
			*len += (size_t)r;
	}
}
