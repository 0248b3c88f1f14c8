/* event_sign.c — HMAC-SHA256 lines and their verification (constant-time
 * comparison of MACs). */
#include "event_sign.h"
#include "../lib/exitcodes.h"
#include "../lib/io.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAC_FIELD ",\"mac\":\""

static int take_key(struct sbx_signer *s, const char *buf, size_t len, const char *what, struct sbx_error *e)
{
	if (len < SBX_KEY_MIN || len > SBX_KEY_MAX) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-key", "%s: a signing key has 16 to 1024 bytes, this has %zu", what, len);
		return -1;
	}
	memcpy(s->key, buf, len);
	s->key_len = len;
	s->enabled = true;
	s->seq = 0;
	s->prev[0] = '\0';
	return 0;
}

int sbx_signer_from_fd(struct sbx_signer *s, int fd, struct sbx_error *e)
{
	size_t len;
	char *buf = sbx_read_fd_capped(fd, SBX_KEY_MAX, &len, "--signing-key-fd", e);
	close(fd);
	if (!buf)
		return -1;
	int rc = take_key(s, buf, len, "--signing-key-fd", e);
	OPENSSL_cleanse(buf, len);
	free(buf);
	return rc;
}

int sbx_signer_from_file(struct sbx_signer *s, const char *path, struct sbx_error *e)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) != 0) {
		sbx_error_set(e, SBX_EXIT_USAGE, "bad-key", "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		sbx_error_set(e, SBX_EXIT_POLICY, "bad-key", "%s: a key file must be a regular file of this uid, mode 0600", path);
		return -1;
	}
	return sbx_signer_from_fd(s, fd, e);
}

static void hmac_hex(const unsigned char *key, size_t key_len, const char *text, size_t len, char out[65])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)text, len, mac, &n);
	for (unsigned i = 0; i < n && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
	out[64] = '\0';
}

char *sbx_signed_json(const unsigned char *key, size_t key_len, json_t *obj, char mac_out[65])
{
	char *text = json_dumps(obj, JSON_COMPACT);
	if (!text)
		return NULL;
	size_t n = strlen(text);
	char mac[65];
	hmac_hex(key, key_len, text, n, mac);
	char *line = malloc(n + sizeof(MAC_FIELD) + 64 + 2);
	if (line) {
		/* {...} becomes {...,"mac":"<hex>"}: the MAC covers all before it. */
		memcpy(line, text, n - 1);
		snprintf(line + n - 1, sizeof(MAC_FIELD) + 64 + 3, "%s%s\"}", MAC_FIELD, mac);
		if (mac_out)
			memcpy(mac_out, mac, 65);
	}
	free(text);
	return line;
}

char *sbx_signer_line(struct sbx_signer *s, json_t *event)
{
	json_object_set_new(event, "seq", json_integer((json_int_t)++s->seq));
	if (s->enabled)
		json_object_set_new(event, "prev", json_string(s->prev));
	if (!s->enabled)
		return json_dumps(event, JSON_COMPACT);
	return sbx_signed_json(s->key, s->key_len, event, s->prev);
}

int sbx_signer_from_bytes(struct sbx_signer *s, const unsigned char *key, size_t len, struct sbx_error *e)
{
	return take_key(s, (const char *)key, len, "signingKey", e);
}

json_t *sbx_verify_signed(char *text, size_t len, const unsigned char *key, size_t key_len, char hex_out[65],
			  const char **why)
{
	char *at = len > 70 ? text + len - 66 - (sizeof(MAC_FIELD) - 1) : NULL;
	if (!at || strncmp(at, MAC_FIELD, sizeof(MAC_FIELD) - 1) || strncmp(text + len - 2, "\"}", 2)) {
		*why = "no MAC at the end";
		return NULL;
	}
	char *hex = at + sizeof(MAC_FIELD) - 1, expected[65];
	/* The signed text: everything before ,"mac": with the brace back. */
	size_t text_len = (size_t)(at - text);
	char saved = text[text_len];
	text[text_len] = '}';
	hmac_hex(key, key_len, text, text_len + 1, expected);
	int mac_ok = CRYPTO_memcmp(expected, hex, 64) == 0;
	json_t *v = mac_ok ? json_loadb(text, text_len + 1, JSON_REJECT_DUPLICATES, NULL) : NULL;
	text[text_len] = saved;
	memcpy(hex_out, hex, 64);
	hex_out[64] = '\0';
	if (!mac_ok)
		*why = "MAC mismatch: the text was altered or signed with another key";
	else if (!json_is_object(v)) {
		*why = "the signed text is not a JSON object";
		json_decref(v);
		v = NULL;
	}
	return v;
}

static json_t *broken(size_t line, const char *reason)
{
	return json_pack("{s:b,s:I,s:s}", "ok", 0, "line", (json_int_t)line, "reason", reason);
}

json_t *sbx_verify_stream(FILE *in, const unsigned char *key, size_t key_len)
{
	char *line = NULL, prev[65] = "";
	size_t cap = 0, number = 0;
	ssize_t got;
	json_t *verdict = NULL;

	while (!verdict && (got = getline(&line, &cap, in)) >= 0) {
		number++;
		while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
			line[--got] = '\0';
		char hex[65];
		const char *why = NULL;
		json_t *ev = sbx_verify_signed(line, (size_t)got, key, key_len, hex, &why);
		if (!ev) {
			verdict = broken(number, why);
			break;
		} else if (json_integer_value(json_object_get(ev, "seq")) != (json_int_t)number)
			verdict = broken(number, "sequence gap: a line was dropped, added or reordered");
		else if (strcmp(json_string_value(json_object_get(ev, "prev")) ? json_string_value(json_object_get(ev, "prev")) : "?", prev))
			verdict = broken(number, "chain broken: prev is not the MAC of the line before");
		json_decref(ev);
		memcpy(prev, hex, 64);
		prev[64] = '\0';
	}
	free(line);
	if (!verdict)
		verdict = number ? json_pack("{s:b,s:I}", "ok", 1, "events", (json_int_t)number)
				 : broken(0, "an empty stream");
	return verdict;
}
