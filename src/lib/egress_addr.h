/* egress_addr.h — what an egress target may be: IP literals in any
 * spelling are recognised (and refused as targets: domain names only), and
 * resolved addresses are classified against every special-purpose range. */
#ifndef SBX_EGRESS_ADDR_H
#define SBX_EGRESS_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>

/* True for anything inet_aton or inet_pton would take as an address
 * (127.1, 0x7f.1, 0177.0.0.1, 2130706433, ::1, [::1], fe80::1%eth0 ...),
 * and for names made only of digits and dots. */
bool sbx_is_ip_literal(const char *host);

/* The reason an address may not be reached ("loopback", "private",
 * "link-local", ...) or NULL when it is a public unicast address.
 * IPv4-mapped and IPv4-compatible IPv6 addresses are judged as their
 * IPv4; NAT64, 6to4 and Teredo prefixes are refused as such. */
const char *sbx_addr_special(const struct sockaddr *sa);

/* The same for text ("10.1.2.3", "::ffff:7f00:1"); "malformed" when it is
 * not an address (fail closed). */
const char *sbx_addr_special_text(const char *text);

#endif
