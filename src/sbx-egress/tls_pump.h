/* tls_pump.h — a TLS connection turned into a plain socket: the HTTP code
 * of the gateway reads and writes the plain end, a thread carries the
 * bytes through the TLS session. */
#ifndef SBX_EGRESS_TLS_PUMP_H
#define SBX_EGRESS_TLS_PUMP_H

#include "relay.h"

#include <openssl/ssl.h>

/* Completes the handshake of ssl on its non-blocking socket within lim: 0,
 * or -1 with why (the verification error when there is one). */
int tls_handshake(SSL *ssl, int fd, const struct sbx_relay_limits *lim, char *why, size_t size);
/* Hands ssl (handshake done, on fd) to a thread that moves bytes between it
 * and the returned plain socket (non-blocking) until both ends are done,
 * one fails, or lim passes; the thread then frees ssl and closes fd. -1
 * when no thread could start (ssl and fd stay the caller's). */
int tls_pump_start(SSL *ssl, int fd, const struct sbx_relay_limits *lim);

#endif
