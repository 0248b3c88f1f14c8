/* resolve.c — --resolve overrides: fixed addresses per NAME:PORT (and, for
 * rebinding tests, other answers for later lookups), no DNS server needed. */
#include "egress.h"
#include "../lib/cli.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void parse_address(const char *text, int port, struct sockaddr_storage *ss)
{
	char addr[64];
	size_t n = strlen(text);
	if (n > 2 && text[0] == '[' && text[n - 1] == ']')
		snprintf(addr, sizeof(addr), "%.*s", (int)(n - 2), text + 1);
	else
		snprintf(addr, sizeof(addr), "%s", text);
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	} else {
		sbx_cli_usage_error("sbx-egress", "--resolve: each ADDR must be an IPv4 or IPv6 address");
	}
}

/* NAME:PORT:ADDR[,ADDR]...[|ADDR[,ADDR]...]..., an IPv6 ADDR bracketed or bare. */
void overrides_add(struct overrides *o, const char *spec)
{
	char buf[1024];
	if (snprintf(buf, sizeof(buf), "%s", spec) >= (int)sizeof(buf))
		sbx_cli_usage_error("sbx-egress", "--resolve: too long");
	char *c1 = strchr(buf, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c1 || !c2 || c1 == buf)
		sbx_cli_usage_error("sbx-egress", "--resolve: expected NAME:PORT:ADDR[,ADDR]...[|ADDR[,ADDR]...]...");
	if (o->n == MAX_OVERRIDES)
		sbx_cli_usage_error("sbx-egress", "--resolve: at most 64");
	*c1 = *c2 = '\0';
	struct override *x = &o->v[o->n];
	memset(x, 0, sizeof(*x));
	if (snprintf(x->name, sizeof(x->name), "%s", buf) >= (int)sizeof(x->name))
		sbx_cli_usage_error("sbx-egress", "--resolve: NAME longer than 253 bytes");
	x->port = (int)sbx_cli_parse_long("--resolve PORT", c1 + 1, 1, 65535);
	for (char *s1 = NULL, *set = strtok_r(c2 + 1, "|", &s1); set; set = strtok_r(NULL, "|", &s1)) {
		for (char *s2 = NULL, *a = strtok_r(set, ",", &s2); a; a = strtok_r(NULL, ",", &s2)) {
			if (x->n_answers == MAX_ANSWERS)
				sbx_cli_usage_error("sbx-egress", "--resolve: at most 8 addresses per NAME:PORT entry");
			parse_address(a, x->port, &x->answers[x->n_answers++]);
		}
		if (!x->n_sets || x->set_end[x->n_sets - 1] != x->n_answers)
			x->set_end[x->n_sets++] = x->n_answers;
	}
	if (!x->n_answers)
		sbx_cli_usage_error("sbx-egress", "--resolve: no ADDR");
	o->n++;
}

int overrides_resolve(const char *host, int port, struct sockaddr_storage *out, int max, char *why, size_t size,
		      void *arg)
{
	struct overrides *o = arg;
	int n = 0;
	for (int i = 0; i < o->n && n < max; i++) {
		struct override *x = &o->v[i];
		if (strcmp(x->name, host) != 0 || x->port != port)
			continue;
		int k = atomic_fetch_add(&x->lookups, 1);
		k = k < x->n_sets ? k : x->n_sets - 1;
		for (int j = k ? x->set_end[k - 1] : 0; j < x->set_end[k] && n < max; j++)
			out[n++] = x->answers[j];
	}
	return n ? n : sbx_egress_getaddrinfo(host, port, out, max, why, size, NULL);
}
