/* fuzz_egress.c — libFuzzer target: the allowlist entry grammar and the
 * authority parser on arbitrary bytes: no crash, no overread, and nothing
 * accepted that is an IP literal or holds a byte a host name cannot. */
#include "egress_addr.h"
#include "egress_policy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[512], why[300];
	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	struct sbx_egress_entry x;
	if (sbx_egress_parse_entry(text, &x, why, sizeof(why)) == 0 && sbx_is_ip_literal(x.host))
		abort();
	struct sbx_egress_target t;
	if (sbx_egress_parse_authority(text, 443, &t, why, sizeof(why)) == 0) {
		if (sbx_is_ip_literal(t.host) || t.port < 1 || t.port > 65535)
			abort();
		for (const char *p = t.host; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
				abort();
	}
	return 0;
}
