/* event_sign.h — every line sbx-run prints, signed: HMAC-SHA256 under a
 * per-run key, with a sequence number and the previous line's MAC, so a
 * dropped, reordered or altered line breaks the chain. The key never
 * reaches the workload. */
#ifndef SBX_EVENT_SIGN_H
#define SBX_EVENT_SIGN_H

#include "../lib/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SBX_KEY_MIN 16
#define SBX_KEY_MAX 1024

struct sbx_signer {
	unsigned char key[SBX_KEY_MAX];
	size_t key_len;
	bool enabled;
	uint64_t seq;
	char prev[65]; /* hex MAC of the previous line; "" before the first */
};

/* The key from a descriptor (read to EOF, then closed) or a file that only
 * its owner, this uid, can read or write. 16 to 1024 bytes. */
int sbx_signer_from_fd(struct sbx_signer *s, int fd, struct sbx_error *e);
int sbx_signer_from_file(struct sbx_signer *s, const char *path, struct sbx_error *e);

/* The line for an event (no newline; free() it): the event with "seq" and
 * "prev" added, then ,"mac":"<hex>" over everything before it. Without a
 * key the line carries seq only. */
char *sbx_signer_line(struct sbx_signer *s, json_t *event);

/* The key from memory (a run document's signingKey). */
int sbx_signer_from_bytes(struct sbx_signer *s, const unsigned char *key, size_t len, struct sbx_error *e);

/* obj as compact JSON with ,"mac":"<hex>" over the text before it (the
 * scheme of event lines, for one document such as a manifest); the MAC
 * also into mac_out when not NULL. free() it. */
char *sbx_signed_json(const unsigned char *key, size_t key_len, json_t *obj, char mac_out[65]);
/* The object of such a text when its MAC verifies (hex_out gets the MAC
 * it carries), else NULL with why. text (len bytes, no newline) is
 * changed and restored. */
json_t *sbx_verify_signed(char *text, size_t len, const unsigned char *key, size_t key_len, char hex_out[65],
			  const char **why);

/* Checks a stream line by line; {ok, events} or {ok:false, line, reason}. */
json_t *sbx_verify_stream(FILE *in, const unsigned char *key, size_t key_len);

#endif
