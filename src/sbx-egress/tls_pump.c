/* tls_pump.c — the handshake of a non-blocking TLS socket within limits,
 * and the thread that carries bytes between a TLS session and a plain
 * socketpair, half-closes passed on, within the relay's limits. */
#include "tls_pump.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PUMP_BUF (16 * 1024)

/* Waits as SSL asks (read or write) on fd within lim. */
static int wait_for(SSL *ssl, int rc, int fd, const struct sbx_relay_limits *lim)
{
	int err = SSL_get_error(ssl, rc);
	if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
		errno = EPROTO;
		return -1;
	}
	return sbx_relay_wait(fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, lim);
}

int tls_handshake(SSL *ssl, int fd, const struct sbx_relay_limits *lim, char *why, size_t size)
{
	ERR_clear_error();
	for (;;) {
		int rc = SSL_do_handshake(ssl);
		if (rc == 1)
			return 0;
		if (wait_for(ssl, rc, fd, lim) == 0)
			continue;
		long verify = SSL_get_verify_result(ssl);
		unsigned long err = ERR_peek_last_error();
		if (errno == ETIMEDOUT)
			snprintf(why, size, "the TLS handshake timed out");
		else if (verify != X509_V_OK)
			snprintf(why, size, "its certificate did not verify: %s", X509_verify_cert_error_string(verify));
		else if (err)
			snprintf(why, size, "the TLS handshake failed: %s", ERR_reason_error_string(err));
		else
			snprintf(why, size, "the TLS handshake failed: the peer closed the connection");
		ERR_clear_error();
		return -1;
	}
}

struct pump {
	SSL *ssl;
	int tls, plain;
	struct sbx_relay_limits lim;
	char to_plain[PUMP_BUF], to_tls[PUMP_BUF];
	size_t tp_off, tp_len, tt_off, tt_len;
	bool tls_eof, plain_eof, tls_closed;
	short tls_events, plain_events;
};

/* What an SSL call that did not complete waits for, noted for the poll;
 * false when it failed or the session ended instead. */
static bool want(struct pump *p, int rc)
{
	int err = SSL_get_error(p->ssl, rc);
	if (err == SSL_ERROR_WANT_READ)
		p->tls_events |= POLLIN;
	else if (err == SSL_ERROR_WANT_WRITE)
		p->tls_events |= POLLOUT;
	return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
}

/* TLS to plain: one record's bytes at a time, passed on before the next. */
static int tls_to_plain(struct pump *p, bool *progress)
{
	if (!p->tls_eof && !p->tp_len) {
		int n = SSL_read(p->ssl, p->to_plain, sizeof(p->to_plain));
		if (n > 0) {
			p->tp_off = 0;
			p->tp_len = (size_t)n;
			*progress = true;
		} else if (!want(p, n)) {
			/* close_notify, or an end without one: either way the plain
			 * side reads an end of stream (HTTP framing tells a cut body
			 * from a finished one). */
			p->tls_eof = true;
			shutdown(p->plain, SHUT_WR);
			*progress = true;
		}
	}
	if (p->tp_len) {
		ssize_t w = send(p->plain, p->to_plain + p->tp_off, p->tp_len - p->tp_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p->tp_off += (size_t)w;
			if (p->tp_off == p->tp_len)
				p->tp_len = 0;
			*progress = true;
		} else if (w < 0 && (errno == EAGAIN || errno == EINTR))
			p->plain_events |= POLLOUT;
		else
			return -1;
	}
	return 0;
}

/* Plain to TLS; the plain side's end becomes a close_notify. */
static int plain_to_tls(struct pump *p, bool *progress)
{
	if (!p->plain_eof && !p->tt_len) {
		ssize_t r = recv(p->plain, p->to_tls, sizeof(p->to_tls), MSG_DONTWAIT);
		if (r > 0) {
			p->tt_off = 0;
			p->tt_len = (size_t)r;
			*progress = true;
		} else if (r == 0) {
			p->plain_eof = true;
			*progress = true;
		} else if (errno == EAGAIN || errno == EINTR)
			p->plain_events |= POLLIN;
		else
			return -1;
	}
	if (p->tt_len) {
		int n = SSL_write(p->ssl, p->to_tls + p->tt_off, (int)(p->tt_len - p->tt_off));
		if (n > 0) {
			p->tt_off += (size_t)n;
			if (p->tt_off == p->tt_len)
				p->tt_len = 0;
			*progress = true;
		} else if (!want(p, n)) {
			return -1;
		}
	}
	if (p->plain_eof && !p->tt_len && !p->tls_closed) {
		(void)SSL_shutdown(p->ssl); /* best effort: the close_notify goes out */
		p->tls_closed = true;
	}
	return 0;
}

static void *pump_thread(void *arg)
{
	struct pump *p = arg;
	for (;;) {
		bool progress = false;
		p->tls_events = p->plain_events = 0;
		if (tls_to_plain(p, &progress) != 0 || plain_to_tls(p, &progress) != 0)
			break;
		/* The HTTP side closes its end only when done with the session:
		 * its last bytes sealed, nothing is left to wait for. */
		if (p->plain_eof && !p->tt_len)
			break;
		if (progress)
			continue;
		long long now = sbx_monotonic_ms(), left = p->lim.deadline_ms ? p->lim.deadline_ms - now : p->lim.idle_ms;
		int ms = left < p->lim.idle_ms ? (int)(left > 0 ? left : 0) : p->lim.idle_ms;
		struct pollfd fds[2] = { { .fd = p->tls, .events = p->tls_events },
					 { .fd = p->plain, .events = p->plain_events } };
		int rc = poll(fds, 2, ms);
		if (rc == 0 || (rc < 0 && errno != EINTR))
			break;
		if ((fds[0].revents & (POLLERR | POLLNVAL)) || (fds[1].revents & POLLNVAL))
			break;
	}
	SSL_free(p->ssl);
	close(p->tls);
	close(p->plain);
	OPENSSL_cleanse(p->to_tls, sizeof(p->to_tls));
	OPENSSL_cleanse(p->to_plain, sizeof(p->to_plain));
	free(p);
	return NULL;
}

int tls_pump_start(SSL *ssl, int fd, const struct sbx_relay_limits *lim)
{
	int pair[2];
	struct pump *p = calloc(1, sizeof(*p));
	if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
		free(p);
		return -1;
	}
	p->ssl = ssl;
	p->tls = fd;
	p->plain = pair[1];
	p->lim = *lim;
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	int rc = pthread_create(&t, &attr, pump_thread, p);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		close(pair[0]);
		close(pair[1]);
		free(p);
		return -1;
	}
	return pair[0];
}
