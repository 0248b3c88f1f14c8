/* egress_policy.c — entries, policies, authorities, matching, decisions. */
#include "egress_policy.h"
#include "egress_addr.h"
#include "exitcodes.h"
#include "hash.h"
#include "json.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int say(char *why, size_t size, const char *fmt, const char *a)
{
	snprintf(why, size, fmt, a);
	return -1;
}

/* "1".."65535": digits only, no sign, no leading zero. */
static int parse_port(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 5 || s[0] == '0')
		return -1;
	long v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v >= 1 && v <= 65535 ? (int)v : -1;
}

/* LDH labels, each 1-63, at least two, 253 in all; lower case only. */
static bool valid_name(const char *host, bool allow_upper, size_t min_labels)
{
	size_t n = strlen(host), labels = 0;
	if (n == 0 || n > 253)
		return false;
	for (const char *s = host; *s;) {
		size_t len = strcspn(s, ".");
		if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-')
			return false;
		for (size_t i = 0; i < len; i++) {
			char c = s[i];
			if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			      (allow_upper && c >= 'A' && c <= 'Z')))
				return false;
		}
		labels++;
		s += len;
		if (*s == '.' && !*++s)
			return false;
	}
	return labels >= min_labels;
}

int sbx_egress_parse_entry(const char *text, struct sbx_egress_entry *out, char *why, size_t size)
{
	char buf[300];

	memset(out, 0, sizeof(*out));
	if (strlen(text) >= sizeof(buf) || !*text)
		return say(why, size, "'%.80s': empty or too long", text);
	memcpy(buf, text, strlen(text) + 1);
	char *colon = strrchr(buf, ':');
	if (colon && !strchr(buf, '[') && strchr(buf, ':') == colon) {
		*colon = '\0';
		if ((out->port = parse_port(colon + 1)) < 0)
			return say(why, size, "'%.80s': the port must be 1 to 65535", text);
	}
	char *host = buf;
	if (!strncmp(host, "*.", 2)) {
		out->wildcard = true;
		host += 2;
	}
	if (!strcmp(text, "*") || sbx_is_ip_literal(host) || strchr(host, ':') || strchr(host, '['))
		return say(why, size, "'%.80s': domain names only (no IP address, no bare '*', no numeric top-level label)", text);
	for (const char *p = host; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			return say(why, size, "'%.80s': lower-case A-labels only", text);
	if (!valid_name(host, false, 2))
		return say(why, size, "'%.80s': not a domain name of two or more LDH labels (63 each, 253 in all)", text);
	if (snprintf(out->host, sizeof(out->host), "%s", host) >= (int)sizeof(out->host))
		return say(why, size, "'%.80s': longer than 253 bytes", text);
	return 0;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int sbx_egress_policy_parse(const json_t *doc, struct sbx_egress_policy *p, struct sbx_error *e)
{
	static const struct sbx_json_field fields[] = {
		{ "mode", SBX_JSON_STRING, true, false },
		{ "allowedDomains", SBX_JSON_ARRAY, true, false },
		{ "allowPrivateNetwork", SBX_JSON_BOOL, false, false },
		{ "revision", SBX_JSON_STRING, false, false },
	};
	char why[300], text[300];
	size_t i;
	json_t *v;

	memset(p, 0, sizeof(*p));
	if (sbx_json_validate(doc, fields, 4, "policy", e) != 0)
		return -1;
	if (strcmp(json_string_value(json_object_get(doc, "mode")), "domain-allowlist") != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-policy", "policy.mode: must be \"domain-allowlist\"");
		return -1;
	}
	json_t *list = json_object_get(doc, "allowedDomains");
	size_t n = json_array_size(list);
	if (n == 0 || n > SBX_EGRESS_MAX_ENTRIES) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-policy", "policy.allowedDomains: 1 to 1000 entries");
		return -1;
	}
	p->entries = calloc(n, sizeof(*p->entries));
	const char **canon = calloc(n, sizeof(*canon));
	char *store = calloc(n, 300);
	if (!p->entries || !canon || !store) {
		free(canon);
		free(store);
		free(p->entries);
		p->entries = NULL;
		sbx_error_set(e, SBX_EXIT_INTERNAL, "out-of-memory", "policy");
		return -1;
	}
	json_array_foreach(list, i, v) {
		if (!json_is_string(v) || sbx_egress_parse_entry(json_string_value(v), &p->entries[i], why, sizeof(why)) != 0) {
			sbx_error_set(e, SBX_EXIT_USAGE, "bad-policy", "policy.allowedDomains[%zu]: %s", i,
				      json_is_string(v) ? why : "must be a string");
			free(canon);
			free(store);
			free(p->entries);
			p->entries = NULL;
			return -1;
		}
		const struct sbx_egress_entry *x = &p->entries[i];
		snprintf(text, sizeof(text), "%s%s", x->wildcard ? "*." : "", x->host);
		if (x->port)
			snprintf(text + strlen(text), sizeof(text) - strlen(text), ":%d", x->port);
		memcpy(store + i * 300, text, strlen(text) + 1);
		canon[i] = store + i * 300;
	}
	p->n = n;
	p->allow_private = json_is_true(json_object_get(doc, "allowPrivateNetwork"));
	/* The revision is the content's: sha256 of ["domain-allowlist",
	 * sorted unique entries, allowPrivateNetwork], 16 hex. */
	qsort(canon, n, sizeof(*canon), by_text);
	json_t *form = json_pack("[s,[],b]", "domain-allowlist", p->allow_private);
	for (i = 0; i < n; i++)
		if (i == 0 || strcmp(canon[i], canon[i - 1]))
			json_array_append_new(json_array_get(form, 1), json_string(canon[i]));
	char *dumped = json_dumps(form, JSON_COMPACT), hex[SBX_SHA256_HEX_LEN + 1];
	sbx_sha256_hex(dumped, strlen(dumped), hex);
	snprintf(p->revision, sizeof(p->revision), "%.16s", hex);
	free(dumped);
	json_decref(form);
	free(canon);
	free(store);
	const char *stated = json_string_value(json_object_get(doc, "revision"));
	if (stated && strcmp(stated, p->revision) != 0) {
		sbx_error_set(e, SBX_EXIT_POLICY, "revision-mismatch",
			      "policy.revision: states %.40s but the content's revision is %s", stated, p->revision);
		return -1;
	}
	return 0;
}

void sbx_egress_policy_free(struct sbx_egress_policy *p)
{
	free(p->entries);
	memset(p, 0, sizeof(*p));
}

int sbx_egress_parse_authority(const char *text, int default_port, struct sbx_egress_target *t, char *why,
			       size_t size)
{
	char buf[300];
	size_t n = strlen(text);

	memset(t, 0, sizeof(*t));
	t->port = default_port;
	if (n == 0 || n >= sizeof(buf)) {
		say(why, size, "%s", "empty or overlong authority");
		return 400;
	}
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if (*p < 0x21 || *p >= 0x7f || *p == '%' || *p == '@' || *p == '\\' || *p == '/' || *p == '?' || *p == '#') {
			say(why, size, "%s", "the authority holds a character a host name never has");
			return 400;
		}
	memcpy(buf, text, n + 1);
	/* An IPv6 literal, bracketed: refused as such, port or not. */
	if (buf[0] == '[') {
		say(why, size, "%s", "an IP address: sandbox network access allows domain names only");
		return 403;
	}
	char *colon = strrchr(buf, ':');
	if (colon && strchr(buf, ':') != colon) {
		say(why, size, "%s", "not HOST[:PORT]: two ports, or an IPv6 address without brackets");
		return 400;
	}
	if (colon) {
		*colon = '\0';
		if ((t->port = parse_port(colon + 1)) < 0) {
			say(why, size, "%s", "the port must be 1 to 65535, digits only");
			return 400;
		}
	}
	size_t len = strlen(buf);
	if (len && buf[len - 1] == '.')
		buf[--len] = '\0';
	if (sbx_is_ip_literal(buf)) {
		say(why, size, "%s", "an IP address: sandbox network access allows domain names only");
		return 403;
	}
	for (char *p = buf; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	/* A single label (localhost, instance-data) is a name: the allowlist,
	 * which only holds dotted names, refuses it (403). */
	if (!valid_name(buf, false, 1)) {
		say(why, size, "%s", "not a host name of LDH labels");
		return 400;
	}
	if (snprintf(t->host, sizeof(t->host), "%s", buf) >= (int)sizeof(t->host)) {
		say(why, size, "%s", "a host name longer than 253 bytes");
		return 400;
	}
	return 0;
}

bool sbx_egress_matches(const struct sbx_egress_policy *p, const struct sbx_egress_target *t)
{
	size_t hlen = strlen(t->host);
	for (size_t i = 0; i < p->n; i++) {
		const struct sbx_egress_entry *x = &p->entries[i];
		size_t elen = strlen(x->host);
		if (x->port && x->port != t->port)
			continue;
		if (!x->wildcard && !strcmp(x->host, t->host))
			return true;
		/* *.example.org: a.example.org and a.b.example.org, never example.org. */
		if (x->wildcard && hlen > elen + 1 && t->host[hlen - elen - 1] == '.' &&
		    !strcmp(t->host + hlen - elen, x->host))
			return true;
	}
	return false;
}

int sbx_egress_getaddrinfo(const char *host, int port, struct sockaddr_storage *out, int max, char *why,
			   size_t size, void *arg)
{
	(void)arg;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *res;
	char service[8];
	snprintf(service, sizeof(service), "%d", port);
	int rc = getaddrinfo(host, service, &hints, &res);
	if (rc != 0) {
		snprintf(why, size, "%s could not be resolved: %s", host, gai_strerror(rc));
		return -1;
	}
	int n = 0;
	for (struct addrinfo *a = res; a && n < max; a = a->ai_next)
		if (a->ai_family == AF_INET || a->ai_family == AF_INET6)
			memcpy(&out[n++], a->ai_addr, a->ai_addrlen);
	freeaddrinfo(res);
	return n;
}

void sbx_egress_addr_text(const struct sockaddr_storage *ss, char *out, size_t size)
{
	const void *a = ss->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
						 : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
	if (!inet_ntop(ss->ss_family, a, out, (socklen_t)size))
		snprintf(out, size, "?");
}

void sbx_egress_decide(const struct sbx_egress_policy *p, const struct sbx_egress_target *t,
		       sbx_egress_resolver resolve, void *arg, struct sbx_egress_decision *d)
{
	struct sockaddr_storage found[16];
	char why[300];

	memset(d, 0, sizeof(*d));
	if (!sbx_egress_matches(p, t)) {
		snprintf(d->reason, sizeof(d->reason), "%s:%d is not in the sandbox network allowed domains", t->host, t->port);
		d->cause = "not-allowed";
		return;
	}
	int n = resolve(t->host, t->port, found, 16, why, sizeof(why), arg);
	if (n <= 0) {
		snprintf(d->reason, sizeof(d->reason), "%s", n < 0 ? why : "no address");
		d->cause = "unresolved";
		return;
	}
	const char *first_refusal = NULL;
	for (int i = 0; i < n; i++) {
		const char *special = sbx_addr_special((const struct sockaddr *)&found[i]);
		/* The private-network switch lifts the special-range rule only. */
		if (special && !p->allow_private) {
			first_refusal = first_refusal ? first_refusal : special;
			continue;
		}
		d->vetted[d->n_vetted++] = found[i];
	}
	if (!d->n_vetted) {
		snprintf(d->reason, sizeof(d->reason),
			 "%s resolves only to special-purpose addresses (%s); enable private network access to allow it",
			 t->host, first_refusal ? first_refusal : "none");
		d->cause = "special-address";
		return;
	}
	d->allowed = true;
	snprintf(d->reason, sizeof(d->reason), "allowed");
}
