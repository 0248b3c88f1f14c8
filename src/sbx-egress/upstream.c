/* upstream.c — the optional outbound HTTP proxy: its URL (credentials
 * percent-decoded into a Basic Proxy-Authorization), connecting to it, and
 * the CONNECT handshake. The policy has decided before any of this runs. */
#include "egress.h"
#include "../lib/text.h"
#include "http_head.h"

#include <errno.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int upstream_parse(const char *url, struct upstream *u, char *why, size_t size)
{
	memset(u, 0, sizeof(*u));
	const char *rest;
	if (!strncasecmp(url, "http://", 7)) {
		rest = url + 7;
	} else if (!strncasecmp(url, "https://", 8)) {
		snprintf(why, size, "--upstream-proxy: https:// proxies are not supported by this build; use http://");
		return -1;
	} else if (!strncasecmp(url, "socks", 5)) {
		snprintf(why, size, "--upstream-proxy: cannot send allowed traffic through a socks proxy (refused, never bypassed)");
		return -1;
	} else {
		snprintf(why, size, "--upstream-proxy: the URL must start with http://");
		return -1;
	}
	size_t auth_len = strcspn(rest, "/?#");
	const char *at = memrchr(rest, '@', auth_len);
	const char *hostport = at ? at + 1 : rest;
	size_t hp_len = auth_len - (size_t)(hostport - rest);
	if (rest[auth_len] && strcmp(rest + auth_len, "/") != 0) {
		snprintf(why, size, "--upstream-proxy: a proxy URL has no path, query or fragment");
		return -1;
	}
	if (at) {
		char cred[512];
		size_t cred_len;
		const char *colon = memchr(rest, ':', (size_t)(at - rest));
		size_t user_len = colon ? (size_t)(colon - rest) : (size_t)(at - rest);
		char user[256], pass[256];
		size_t ul, pl = 0;
		pass[0] = '\0';
		if (sbx_percent_decode(rest, user_len, user, sizeof(user), &ul) != 0 ||
		    (colon && sbx_percent_decode(colon + 1, (size_t)(at - colon - 1), pass, sizeof(pass), &pl) != 0) ||
		    memchr(user, ':', ul)) {
			snprintf(why, size, "--upstream-proxy: the user name or password is badly percent-encoded");
			return -1;
		}
		cred_len = (size_t)snprintf(cred, sizeof(cred), "%s:%s", user, pass);
		unsigned char b64[700];
		EVP_EncodeBlock(b64, (const unsigned char *)cred, (int)cred_len);
		snprintf(u->authorization, sizeof(u->authorization), "Basic %s", b64);
		explicit_bzero(cred, sizeof(cred));
		explicit_bzero(pass, sizeof(pass));
	}
	const char *pcolon = memrchr(hostport, ':', hp_len);
	size_t host_len = pcolon ? (size_t)(pcolon - hostport) : hp_len;
	u->port = 80;
	if (pcolon) {
		char digits[8];
		size_t dn = hp_len - host_len - 1;
		char *end;
		snprintf(digits, sizeof(digits), "%.*s", (int)(dn < 7 ? dn : 7), pcolon + 1);
		long port = strtol(digits, &end, 10);
		if (dn == 0 || dn > 5 || *end || digits[0] < '1' || digits[0] > '9' || port < 1 || port > 65535) {
			snprintf(why, size, "--upstream-proxy: the port must be 1 to 65535");
			return -1;
		}
		u->port = (int)port;
	}
	if (host_len >= 2 && hostport[0] == '[' && hostport[host_len - 1] == ']') {
		hostport++;
		host_len -= 2;
	}
	if (host_len == 0 || host_len >= sizeof(u->host)) {
		snprintf(why, size, "--upstream-proxy: no host");
		return -1;
	}
	memcpy(u->host, hostport, host_len);
	u->host[host_len] = '\0';
	return 0;
}

int upstream_connect(const struct upstream *u, const struct overrides *o, int timeout_ms)
{
	struct sockaddr_storage addrs[16];
	char why[300];
	int n = overrides_resolve(u->host, u->port, addrs, 16, why, sizeof(why), (void *)o);
	int err = EHOSTUNREACH;
	for (int i = 0; i < n; i++) {
		socklen_t len = addrs[i].ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
		int fd = sbx_connect_within((struct sockaddr *)&addrs[i], len, timeout_ms);
		if (fd >= 0)
			return fd;
		err = errno;
	}
	errno = err;
	return -1;
}

int upstream_tunnel(int fd, const struct upstream *u, const char *host, int port, int timeout_ms, char *extra,
		    size_t extra_size, size_t *extra_len)
{
	char req[2048], *buf = malloc(SBX_HTTP_HEAD_MAX);
	struct sbx_relay_limits lim = { .deadline_ms = sbx_monotonic_ms() + timeout_ms };
	int n = snprintf(req, sizeof(req), "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n%s%s%sProxy-Connection: keep-alive\r\n\r\n",
			 host, port, host, port, *u->authorization ? "Proxy-Authorization: " : "", u->authorization,
			 *u->authorization ? "\r\n" : "");
	if (!buf || n >= (int)sizeof(req) || sbx_relay_write_all(fd, req, (size_t)n, &lim) != 0) {
		free(buf);
		return -1;
	}
	explicit_bzero(req, sizeof(req));
	size_t len = 0;
	struct sbx_http_head h;
	char why[200];
	for (;;) {
		int rc = sbx_http_parse_response(buf, len, &h, why, sizeof(why));
		if (rc == 0)
			break;
		if (rc < 0 || len == SBX_HTTP_HEAD_MAX) {
			free(buf);
			errno = EPROTO;
			return -1;
		}
		if (sbx_relay_wait(fd, POLLIN, &lim) != 0) {
			free(buf);
			return -1;
		}
		ssize_t r = recv(fd, buf + len, SBX_HTTP_HEAD_MAX - len, 0);
		if (r <= 0 && !(r < 0 && (errno == EAGAIN || errno == EINTR))) {
			free(buf);
			errno = r == 0 ? ECONNRESET : errno;
			return -1;
		}
		if (r > 0)
			len += (size_t)r;
	}
	if (h.status != 200 || len - h.length > extra_size) {
		free(buf);
		errno = ECONNREFUSED;
		return -1;
	}
	*extra_len = len - h.length;
	memcpy(extra, buf + h.length, *extra_len);
	free(buf);
	return 0;
}
