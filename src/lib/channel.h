/* channel.h — the worker channel's wire format: frames of a 4-byte
 * big-endian length and one UTF-8 JSON object. The decoder is incremental
 * (feed any bytes, get complete frames) and treats anything malformed as a
 * sandbox violation: the workload is untrusted, the supervisor is not. */
#ifndef SBX_CHANNEL_H
#define SBX_CHANNEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SBX_CHANNEL_MAX_FRAME (1u << 20) /* default largest frame: 1 MiB */

struct sbx_channel {
	size_t max_frame;
	unsigned char header[4];
	size_t header_have;
	char *frame;          /* the frame being assembled */
	size_t frame_len, frame_have;
	bool terminal_seen;   /* a result or error arrived: nothing may follow */
	bool violated;
	char violation[256];  /* what went wrong; never the offending bytes */
	uint64_t frames;
};

void sbx_channel_init(struct sbx_channel *c, size_t max_frame);
/* True between a frame's first byte and its last: a channel that closes
 * now has cut a message off. */
bool sbx_channel_mid_frame(const struct sbx_channel *c);
void sbx_channel_free(struct sbx_channel *c);

/* Called for each valid message (the callee owns nothing: the message is
 * freed after the call). A non-zero return stops feeding and is returned. */
typedef int (*sbx_channel_cb)(json_t *message, const char *type, void *arg);

/* Feeds bytes. Returns 0, the callback's non-zero value, or -1 on a
 * violation (c->violation says which; the channel stays violated). */
int sbx_channel_feed(struct sbx_channel *c, const void *data, size_t len, sbx_channel_cb cb, void *arg);

/* Checks one decoded message against the schema of its type: 0 for a
 * message, 1 for a terminal one (result, error), -1 with a bounded
 * description in why. Also used by sbx-report before sending. */
int sbx_channel_check(const json_t *message, const char **type, char *why, size_t size);

/* Encodes a message as a frame (header + JSON); free() the result. */
char *sbx_channel_encode(const json_t *message, size_t *len);

#endif
