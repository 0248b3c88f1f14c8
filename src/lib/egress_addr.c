/* egress_addr.c — IP-literal recognition and special-purpose ranges (the
 * IANA IPv4/IPv6 special-purpose registries, multicast, site-local, SIIT) as
 * binary prefixes (never string prefixes: "fc0::1" is not fc00::/7). */
#include "egress_addr.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct range {
	unsigned char prefix[16];
	int bits;
	const char *reason;
};

#define V4(a, b, c, d) { a, b, c, d }
static const struct range v4_ranges[] = {
	{ V4(0, 0, 0, 0), 8, "this-network" },
	{ V4(10, 0, 0, 0), 8, "private" },
	{ V4(100, 64, 0, 0), 10, "shared-address-space" },
	{ V4(127, 0, 0, 0), 8, "loopback" },
	{ V4(169, 254, 0, 0), 16, "link-local" },
	{ V4(172, 16, 0, 0), 12, "private" },
	{ V4(192, 0, 0, 0), 24, "ietf-protocol-assignments" },
	{ V4(192, 0, 2, 0), 24, "documentation" },
	{ V4(192, 31, 196, 0), 24, "as112" },
	{ V4(192, 52, 193, 0), 24, "amt" },
	{ V4(192, 88, 99, 0), 24, "6to4-relay-anycast" },
	{ V4(192, 168, 0, 0), 16, "private" },
	{ V4(192, 175, 48, 0), 24, "as112-direct-delegation" },
	{ V4(198, 18, 0, 0), 15, "benchmarking" },
	{ V4(198, 51, 100, 0), 24, "documentation" },
	{ V4(203, 0, 113, 0), 24, "documentation" },
	{ V4(224, 0, 0, 0), 4, "multicast" },
	{ V4(240, 0, 0, 0), 4, "reserved" },
	{ V4(255, 255, 255, 255), 32, "broadcast" },
};

static const struct range v6_ranges[] = {
	{ { 0 }, 128, "unspecified" },
	{ { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 128, "loopback" },
	/* ::ffff:0:a.b.c.d (SIIT, RFC 2765): refused outright, never judged by its IPv4. */
	{ { 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 }, 96, "ipv4-translated" },
	{ { 0x00, 0x64, 0xff, 0x9b }, 96, "nat64" },
	{ { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48, "nat64-local" },
	{ { 0x01, 0x00 }, 64, "discard-only" },
	{ { 0x01, 0x00, 0, 0, 0, 0, 0, 0x01 }, 64, "dummy-prefix" },
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, "documentation" },
	{ { 0x20, 0x01 }, 32, "teredo" },
	{ { 0x20, 0x01 }, 23, "ietf-protocol-assignments" },
	{ { 0x20, 0x02 }, 16, "6to4" },
	{ { 0x26, 0x20, 0x00, 0x4f, 0x80, 0x00 }, 48, "as112-direct-delegation" },
	{ { 0x3f, 0xff }, 20, "documentation" },
	{ { 0x5f, 0x00 }, 16, "srv6-sid" },
	{ { 0xfc }, 7, "unique-local" },
	{ { 0xfe, 0x80 }, 10, "link-local" },
	{ { 0xfe, 0xc0 }, 10, "site-local" },
	{ { 0xff }, 8, "multicast" },
};

static bool in_range(const unsigned char *addr, const struct range *r)
{
	int full = r->bits / 8, rest = r->bits % 8;
	if (memcmp(addr, r->prefix, (size_t)full) != 0)
		return false;
	if (rest == 0)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (addr[full] & mask) == (r->prefix[full] & mask);
}

static const char *v4_special(const unsigned char *a)
{
	for (size_t i = 0; i < sizeof(v4_ranges) / sizeof(v4_ranges[0]); i++)
		if (in_range(a, &v4_ranges[i]))
			return v4_ranges[i].reason;
	return NULL;
}

static const char *v6_special(const unsigned char *a)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const unsigned char zero12[12] = { 0 };
	/* ::ffff:a.b.c.d and ::a.b.c.d (deprecated compatible form) carry an
	 * IPv4 address: judge that; ::/96 itself is refused outright. */
	if (memcmp(a, mapped, 12) == 0)
		return v4_special(a + 12);
	if (memcmp(a, zero12, 12) == 0) {
		const char *inner = v4_special(a + 12);
		return inner ? inner : "ipv4-compatible";
	}
	for (size_t i = 0; i < sizeof(v6_ranges) / sizeof(v6_ranges[0]); i++)
		if (in_range(a, &v6_ranges[i]))
			return v6_ranges[i].reason;
	/* Only 2000::/3 is global unicast (IANA IPv6 address space): the rest
	 * is reserved, and no public host has an address there. */
	return (a[0] & 0xe0) == 0x20 ? NULL : "reserved";
}

const char *sbx_addr_special(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return v4_special((const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr);
	if (sa->sa_family == AF_INET6)
		return v6_special((const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return "not-ip";
}

const char *sbx_addr_special_text(const char *text)
{
	unsigned char buf[16];
	if (inet_pton(AF_INET, text, buf) == 1)
		return v4_special(buf);
	if (inet_pton(AF_INET6, text, buf) == 1)
		return v6_special(buf);
	return "malformed";
}

bool sbx_is_ip_literal(const char *host)
{
	struct in_addr a4;
	unsigned char a6[16];
	char buf[256];
	size_t n = strlen(host);

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, host, n + 1);
	/* [v6], and v6 zone ids (fe80::1%eth0). */
	if (buf[0] == '[' && buf[n - 1] == ']') {
		buf[n - 1] = '\0';
		memmove(buf, buf + 1, n - 1);
	}
	char *zone = strchr(buf, '%');
	if (zone)
		*zone = '\0';
	if (inet_aton(buf, &a4) || inet_pton(AF_INET6, buf, a6) == 1 || strchr(buf, ':'))
		return true;
	/* Digits and dots only (and an all-numeric last label) would be read
	 * as an address by some resolver or other: never a domain name. */
	const char *last = strrchr(buf, '.');
	last = last ? last + 1 : buf;
	bool numeric_tld = *last != '\0';
	for (const char *p = last; *p; p++)
		if (*p < '0' || *p > '9')
			numeric_tld = false;
	return numeric_tld;
}
